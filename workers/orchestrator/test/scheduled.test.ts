// Cron trigger: scheduled() starts each enabled schedule whose cron matches the tick's minute,
// exactly once per minute however often it is triggered, with the real SwarmRoom and local D1.
import { createExecutionContext, createScheduledController, listDurableObjectIds, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import worker from "../index.ts";
import { callApi, validSpec } from "./call-api.ts";

const CreatedScheduleSchema = z.object({ id: z.string() });
const ScheduleStateSchema = z.object({ last_run_minute: z.number().nullable(), last_swarm_id: z.string().nullable() });
const SwarmRowSchema = z.object({ id: z.string(), tenant: z.string(), name: z.string(), state: z.string(), task_count: z.number() });

/** 2031-03-04 05:06 UTC. Storage is shared by the tests of this file, so each test picks its own minutes or crons. */
const TICK = Date.UTC(2031, 2, 4, 5, 6, 0);

async function saveSchedule(cron: string, options: { enabled?: boolean; name?: string } = {}): Promise<string> {
  const response = await callApi("/v1/schedules", {
    json: { name: options.name ?? `every ${cron}`, cron, spec: validSpec({ name: options.name ?? "scheduled review" }), enabled: options.enabled ?? true },
  });
  expect(response.status).toBe(201);
  return CreatedScheduleSchema.parse(await response.json()).id;
}

async function tick(scheduledTime: number): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ scheduledTime, cron: "* * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

async function swarmsStartedBy(scheduleId: string): Promise<z.infer<typeof SwarmRowSchema>[]> {
  const { results } = await env.LEDGER_DB.prepare("SELECT id, tenant, name, state, task_count FROM swarms WHERE origin = ?1")
    .bind(`schedule:${scheduleId}`)
    .all();
  return z.array(SwarmRowSchema).parse(results);
}

async function scheduleState(scheduleId: string): Promise<z.infer<typeof ScheduleStateSchema>> {
  const row = await env.LEDGER_DB.prepare("SELECT last_run_minute, last_swarm_id FROM schedules WHERE id = ?1").bind(scheduleId).first();
  return ScheduleStateSchema.parse(row);
}

describe("scheduled()", () => {
  it("starts a due schedule exactly once, however often the same minute is triggered", async () => {
    const id = await saveSchedule("6 5 * * *");
    await tick(TICK);
    await tick(TICK + 30_000); // same minute, later second
    await Promise.all([tick(TICK), tick(TICK + 59_999)]); // concurrent duplicates

    const swarms = await swarmsStartedBy(id);
    expect(swarms).toHaveLength(1);
    expect(swarms[0]).toMatchObject({ name: "scheduled review", state: "running", task_count: 3 });
    expect(await scheduleState(id)).toEqual({ last_run_minute: TICK / 60_000, last_swarm_id: swarms[0]?.id });

    // The swarm belongs to the schedule's tenant and is readable through the API.
    const status = await callApi(`/v1/swarms/${swarms[0]?.id ?? ""}`);
    expect(status.status).toBe(200);
  });

  it("starts it again at its next matching minute", async () => {
    const id = await saveSchedule("*/10 * * * *");
    await tick(Date.UTC(2031, 2, 4, 7, 0));
    await tick(Date.UTC(2031, 2, 4, 7, 5)); // not matching
    await tick(Date.UTC(2031, 2, 4, 7, 10));
    expect(await swarmsStartedBy(id)).toHaveLength(2);
  });

  it("ignores a tick older than the last run (a late duplicate never restarts it)", async () => {
    const id = await saveSchedule("* * * * *");
    await tick(Date.UTC(2031, 2, 4, 8, 1));
    await tick(Date.UTC(2031, 2, 4, 8, 0));
    expect(await swarmsStartedBy(id)).toHaveLength(1);
  });

  it("does not start a schedule whose cron does not match the minute", async () => {
    const id = await saveSchedule("7 5 * * *");
    await tick(TICK);
    expect(await swarmsStartedBy(id)).toHaveLength(0);
    expect(await scheduleState(id)).toEqual({ last_run_minute: null, last_swarm_id: null });
  });

  it("does not start a disabled schedule", async () => {
    const id = await saveSchedule("6 5 * * *", { enabled: false });
    await tick(TICK);
    expect(await swarmsStartedBy(id)).toHaveLength(0);
  });

  it("logs a schedule whose stored spec went bad and still starts the others", async () => {
    const broken = await saveSchedule("0 9 * * *", { name: "broken" });
    const healthy = await saveSchedule("0 9 * * *", { name: "healthy" });
    await env.LEDGER_DB.prepare("UPDATE schedules SET spec = ?1 WHERE id = ?2").bind('{"name":"x","tasks":[]}', broken).run();

    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      await tick(Date.UTC(2031, 2, 4, 9, 0));
      expect(logged.mock.calls.flat().join(" ")).toContain(broken);
    } finally {
      logged.mockRestore();
    }
    expect(await swarmsStartedBy(broken)).toHaveLength(0);
    expect(await swarmsStartedBy(healthy)).toHaveLength(1);
  });

  it("records a run whose stored spec no longer admits as failed, naming why, with no SwarmRoom", async () => {
    // Saved while it admitted; since then (as after a settings change) its model has no price under its USD budget.
    const stale = await saveSchedule("0 10 * * *", { name: "stale" });
    const spec = JSON.stringify(validSpec({ name: "stale", model: "unpriced-model", budget: { max_usd: 1 } }));
    await env.LEDGER_DB.prepare("UPDATE schedules SET spec = ?1 WHERE id = ?2").bind(spec, stale).run();
    // Other tests' schedules ("* * * * *", "*/10 * * * *") start at this minute too: each of theirs has a room and an index row.
    const counts = async () => ({
      rooms: (await listDurableObjectIds(env.SWARM_ROOM)).length,
      swarms: z.object({ n: z.number() }).parse(await env.LEDGER_DB.prepare("SELECT COUNT(*) AS n FROM swarms").first()).n,
    });
    const before = await counts();

    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      await tick(Date.UTC(2031, 2, 4, 10, 0));
      const line = logged.mock.calls.flat().join(" ");
      expect(line).toContain(stale);
      expect(line).toContain('budget.max_usd: model "unpriced-model" has no price');
    } finally {
      logged.mockRestore();
    }
    expect(await swarmsStartedBy(stale)).toHaveLength(0);
    expect(await scheduleState(stale)).toEqual({ last_run_minute: Date.UTC(2031, 2, 4, 10, 0) / 60_000, last_swarm_id: null });
    const after = await counts();
    expect(after.swarms).toBeGreaterThan(before.swarms);
    expect(after.rooms - before.rooms).toBe(after.swarms - before.swarms);
  });
});

describe("scheduled(): waking unfinished swarms", () => {
  it("gives an unfinished swarm whose alarm was lost (a restarted local stack) its alarm back, and leaves one with an alarm alone", async () => {
    const created = await callApi("/v1/swarms", { json: validSpec({ name: "lost alarm" }) });
    expect(created.status).toBe(202);
    const { id } = z.object({ id: z.string() }).parse(await created.json());
    const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(id));
    // A restart keeps storage but not the alarm (workers-sdk#7781).
    await runInDurableObject(stub, async (_instance, state) => {
      await state.storage.deleteAlarm();
    });
    vi.spyOn(console, "log").mockImplementation(() => {});

    await tick(Date.UTC(2031, 5, 1, 0, 0, 0));

    const alarm = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect(alarm ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(Date.now());
    expect(await stub.wake()).toEqual({ woken: false });
  });
});
