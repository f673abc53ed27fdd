// SwarmStore on a real room's SQLite: the swarm row is read once per request, and any statement
// through the store's SqlStorage that writes it (the room's, the phases') is seen at once.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LimitsSchema, PlannerSpecSchema } from "../core/spec-schema.ts";
import type { StartSwarmInput } from "../core/swarm-contract.ts";
import { insertPlanTask } from "./swarm-phases.ts";
import { SwarmStore } from "./swarm-store.ts";

let counter = 0;

async function startedSwarm() {
  counter += 1;
  const swarmId = `sw_storetest${Date.now().toString(36)}${counter}`;
  const input: StartSwarmInput = {
    swarmId,
    tenant: "tk_test",
    spec: { name: `store test ${counter}`, model: "mock-1", limits: LimitsSchema.parse({ concurrency: 4 }) },
    tasks: [{ id: "task-001", prompt: "prompt 1" }],
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toEqual({ created: true });
  return stub;
}

describe("SwarmStore", () => {
  it("stores every task of a swarm once, in the spec's order, with its fields, however many inserts it takes", async () => {
    counter += 1;
    const swarmId = `sw_storetest${Date.now().toString(36)}${counter}`;
    // Five prompts near MAX_PROMPT_CHARS (a few to an insert, by size) among 2,500 small ones (by
    // count), with what JSON escapes or encodes in more than a byte.
    const odd = 'quote " backslash \\ newline \n tab \t nul \u0000 bell \u0007 é 漢字 😀';
    const tasks = Array.from({ length: 2_505 }, (_, i) => ({
      id: `task-${String(i).padStart(5, "0")}`,
      prompt: i % 500 === 7 ? `${odd} ${"p".repeat(190_000)} ${i}` : `${odd} ${i}`,
      ...(i % 3 === 0 ? { long: true } : {}),
      ...(i % 5 === 0 ? { model: "mock-1" } : {}),
    }));
    const input: StartSwarmInput = {
      swarmId,
      tenant: "tk_test",
      spec: { name: "many tasks", model: "mock-1", limits: LimitsSchema.parse({ concurrency: 4 }) },
      tasks,
      createdAt: Date.now(),
      origin: { kind: "api" },
    };
    const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
    expect(await stub.start(input)).toEqual({ created: true });
    await runInDurableObject(stub, (_instance, state) => {
      const rows = state.storage.sql
        .exec<{ id: string; prompt: string; state: string; long: number; model_hint: string | null }>(
          "SELECT id, prompt, state, long, model_hint FROM tasks WHERE kind = 'task' ORDER BY seq",
        )
        .toArray()
        .map((row) => ({ ...row }));
      expect(rows).toEqual(
        tasks.map((task) => ({ id: task.id, prompt: task.prompt, state: "pending", long: task.long ? 1 : 0, model_hint: task.model ?? null })),
      );
    });
  });

  it("reads the swarm row once per request: a write that bypasses its SqlStorage is seen from the next request on", async () => {
    const stub = await startedSwarm();
    await runInDurableObject(stub, (_instance, state) => {
      const store = new SwarmStore(state.storage.sql);
      const first = store.swarm();
      expect(first?.window).toBe(4);
      expect(store.swarm()).toBe(first);
      state.storage.sql.exec("UPDATE swarm SET window = 3");
      expect(store.swarm()?.window).toBe(4);
      store.begin();
      expect(store.swarm()?.window).toBe(3);
    });
  });

  it("drops the row it read when a statement through its SqlStorage writes the swarm row, and only then", async () => {
    const stub = await startedSwarm();
    await runInDurableObject(stub, (_instance, state) => {
      const store = new SwarmStore(state.storage.sql);
      const first = store.swarm();
      // Writes to other tables keep the row.
      store.sql.exec("UPDATE tasks SET tool_calls = 1 WHERE id = 'task-001'");
      store.sql.exec("INSERT INTO scratchpad (key, value, task_id, updated_at) VALUES ('k', 'v', 'task-001', 0)");
      expect(store.swarm()).toBe(first);
      // The shapes of the room's writes: UPDATE on one line, or after a line break, in any case.
      store.sql.exec("UPDATE swarm SET window = ?, window_credit = ?", 2, 0.5);
      expect(store.swarm()?.window).toBe(2);
      store.sql.exec("\n      update swarm set retries_used = 1");
      expect(store.swarm()?.retries_used).toBe(1);
      // A phase's write, through the SqlStorage the room hands the phases.
      const swarm = store.swarm();
      if (swarm === null) throw new Error("no swarm");
      insertPlanTask(store.sql, { ...swarm, goal: "a goal" }, PlannerSpecSchema.parse({}), LimitsSchema.parse({}), null);
      expect(store.swarm()?.plan_attempts).toBe(swarm.plan_attempts + 1);
      // Deleting the row is a write too.
      store.sql.exec("DELETE FROM swarm");
      expect(store.swarm()).toBeNull();
    });
  });
});
