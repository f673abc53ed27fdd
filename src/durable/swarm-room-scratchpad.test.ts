// The SwarmRoom's shared scratchpad, through its RPC surface on the real local Durable Object:
// what the scratchpad_* tools of a swarm's agents read and write.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LimitsSchema } from "../core/spec-schema.ts";
import type { StartSwarmInput } from "../core/swarm-contract.ts";

let counter = 0;

async function startedSwarm() {
  counter += 1;
  const swarmId = `sw_padtest${Date.now().toString(36)}${counter}`;
  const input: StartSwarmInput = {
    swarmId,
    tenant: "tk_test",
    spec: { name: `scratchpad test ${counter}`, model: "mock-1", limits: LimitsSchema.parse({}) },
    tasks: [{ id: "task-001", prompt: "prompt 1" }],
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toEqual({ created: true });
  return stub;
}

describe("SwarmRoom scratchpad", () => {
  it("puts, gets and overwrites a value; a missing key reads as null", async () => {
    const room = await startedSwarm();
    expect(await room.scratchpad({ op: "get", key: "plan" })).toEqual({ ok: true, op: "get", key: "plan", value: null });
    expect(await room.scratchpad({ op: "put", key: "plan", value: "step 1", taskId: "task-001" })).toEqual({ ok: true, op: "put", key: "plan", bytes: 6 });
    expect(await room.scratchpad({ op: "get", key: "plan" })).toEqual({ ok: true, op: "get", key: "plan", value: "step 1" });
    expect(await room.scratchpad({ op: "put", key: "plan", value: "step 2 ✓", taskId: "task-002" })).toEqual({ ok: true, op: "put", key: "plan", bytes: 8 });
    expect(await room.scratchpad({ op: "get", key: "plan" })).toEqual({ ok: true, op: "get", key: "plan", value: "step 2 ✓" });
    expect(await room.scratchpad({ op: "put", key: "plan", value: "", taskId: "task-001" })).toMatchObject({ ok: true });
    expect(await room.scratchpad({ op: "get", key: "plan" })).toEqual({ ok: true, op: "get", key: "plan", value: "" });
    expect(await room.scratchpad({ op: "get", key: "Plan" })).toEqual({ ok: true, op: "get", key: "Plan", value: null });
    expect(await room.scratchpad({ op: "list", prefix: "" })).toEqual({ ok: true, op: "list", keys: ["plan"], truncated: false });
  });

  it("keeps each swarm's scratchpad to itself", async () => {
    const a = await startedSwarm();
    const b = await startedSwarm();
    await a.scratchpad({ op: "put", key: "shared?", value: "a", taskId: "task-001" });
    expect(await b.scratchpad({ op: "get", key: "shared?" })).toEqual({ ok: true, op: "get", key: "shared?", value: null });
  });

  // Prefix matching is literal: `%` and `_` (LIKE's wildcards) match only themselves, case counts.
  const keys = ["a%b", "a%c", "a_b", "aXb", "ab", "abc", "Ab", "é/1", "é/2", "ü", "日本/1", "日本/2", "日本語", "z"];
  it.each([
    { prefix: "", want: ["Ab", "a%b", "a%c", "aXb", "a_b", "ab", "abc", "z", "é/1", "é/2", "ü", "日本/1", "日本/2", "日本語"] },
    { prefix: "a", want: ["a%b", "a%c", "aXb", "a_b", "ab", "abc"] },
    { prefix: "a%", want: ["a%b", "a%c"] },
    { prefix: "a_", want: ["a_b"] },
    { prefix: "%", want: [] },
    { prefix: "_", want: [] },
    { prefix: "ab", want: ["ab", "abc"] },
    { prefix: "abc", want: ["abc"] },
    { prefix: "abcd", want: [] },
    { prefix: "A", want: ["Ab"] },
    { prefix: "é", want: ["é/1", "é/2"] },
    { prefix: "日本", want: ["日本/1", "日本/2", "日本語"] },
    { prefix: "日本/", want: ["日本/1", "日本/2"] },
  ])("lists the keys starting with $prefix, in key order", async ({ prefix, want }) => {
    const room = await startedSwarm();
    for (const key of keys) expect(await room.scratchpad({ op: "put", key, value: `v:${key}`, taskId: "task-001" })).toMatchObject({ ok: true });
    expect(await room.scratchpad({ op: "list", prefix })).toEqual({ ok: true, op: "list", keys: want, truncated: false });
  });

  // SQLite compares UTF-8 bytes, where every character above U+FFFF (emoji) sorts after U+FFFF: a
  // `prefix + "\uffff"` upper bound would never list these keys (a bug this test caught).
  it("lists keys whose next character is outside the Basic Multilingual Plane (emoji)", async () => {
    const room = await startedSwarm();
    for (const key of ["note😀", "note1", "😀start"]) await room.scratchpad({ op: "put", key, value: "v", taskId: "task-001" });
    expect(await room.scratchpad({ op: "list", prefix: "note" })).toEqual({ ok: true, op: "list", keys: ["note1", "note😀"], truncated: false });
    expect(await room.scratchpad({ op: "list", prefix: "" })).toEqual({ ok: true, op: "list", keys: ["note1", "note😀", "😀start"], truncated: false });
  });

  it("lists at most 200 keys and says when there are more", async () => {
    const room = await startedSwarm();
    const all = Array.from({ length: 201 }, (_, i) => `item/${String(i).padStart(3, "0")}`);
    for (const key of all.slice(0, 200)) await room.scratchpad({ op: "put", key, value: "v", taskId: "task-001" });
    await room.scratchpad({ op: "put", key: "other", value: "v", taskId: "task-001" });
    // Exactly 200 matches: all of them, not truncated.
    expect(await room.scratchpad({ op: "list", prefix: "item/" })).toEqual({ ok: true, op: "list", keys: all.slice(0, 200), truncated: false });

    await room.scratchpad({ op: "put", key: all[200] ?? "", value: "v", taskId: "task-001" });
    expect(await room.scratchpad({ op: "list", prefix: "item/" })).toEqual({ ok: true, op: "list", keys: all.slice(0, 200), truncated: true });
    expect(await room.scratchpad({ op: "list", prefix: "" })).toEqual({ ok: true, op: "list", keys: all.slice(0, 200), truncated: true });
    expect(await room.scratchpad({ op: "list", prefix: "item/1" })).toEqual({ ok: true, op: "list", keys: all.slice(100, 200), truncated: false });
  });

  it.each([
    { case: "a value of 65,536 characters is kept", value: "v".repeat(65_536), ok: true },
    { case: "a value of 65,537 characters is refused", value: "v".repeat(65_537), ok: false },
  ])("$case", async ({ value, ok }) => {
    const room = await startedSwarm();
    const put = await room.scratchpad({ op: "put", key: "big", value, taskId: "task-001" });
    if (ok) {
      expect(put).toEqual({ ok: true, op: "put", key: "big", bytes: value.length });
      expect(await room.scratchpad({ op: "get", key: "big" })).toEqual({ ok: true, op: "get", key: "big", value });
    } else {
      expect(put).toEqual({ ok: false, error: "values are at most 65536 characters" });
      expect(await room.scratchpad({ op: "get", key: "big" })).toEqual({ ok: true, op: "get", key: "big", value: null });
    }
  });

  it.each([
    { case: "an empty key", key: "" },
    { case: "a key of 201 characters", key: "k".repeat(201) },
  ])("refuses to put $case", async ({ key }) => {
    const room = await startedSwarm();
    expect(await room.scratchpad({ op: "put", key, value: "v", taskId: "task-001" })).toEqual({ ok: false, error: "keys are 1-200 characters" });
    expect(await room.scratchpad({ op: "list", prefix: "" })).toEqual({ ok: true, op: "list", keys: [], truncated: false });
  });

  it.each([
    { op: "get", request: { op: "get", key: "k" } },
    { op: "put", request: { op: "put", key: "k", value: "v", taskId: "task-001" } },
    { op: "list", request: { op: "list", prefix: "" } },
  ] as const)("answers $op on a swarm that was never started with ok:false", async ({ request }) => {
    const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(`sw_padnobody${Date.now().toString(36)}${request.op}`));
    expect(await stub.scratchpad(request)).toEqual({ ok: false, error: "the swarm does not exist" });
  });
});
