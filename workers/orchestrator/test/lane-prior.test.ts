// A swarm's first lanes sized on the tenant's last swarm of the same model: what its lanes measured
// reaches the D1 index (lane_slots, lane_latency_ms, lane_ttfb_ms), and the next start reads it, against the real
// SwarmRoom and local D1. The swarm's status shows the lanes it opened (`dispatch`).
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { TaskReport } from "../../../src/core/swarm-contract.ts";
import { type SwarmIndexRow, toSwarmIndexUpsert } from "../../../src/ledger/d1-ledger.ts";
import { createSwarmIndex } from "../swarm-index.ts";
import { callApi, createTenantKey, validSpec } from "./call-api.ts";

const DispatchSchema = z.object({ dispatch: z.object({ lanes: z.number(), slots: z.number() }) });

function room(swarmId: string) {
  return env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
}

async function startSwarm(token: string, tasks: number, concurrency: number): Promise<string> {
  const spec = validSpec({ tasks: Array.from({ length: tasks }, (_, i) => ({ prompt: `task ${i}` })), limits: { concurrency } });
  const response = await callApi("/v1/swarms", { json: spec, token });
  expect(response.status).toBe(202);
  return z.object({ id: z.string() }).parse(await response.json()).id;
}

async function dispatchOf(swarmId: string, token: string): Promise<{ lanes: number; slots: number }> {
  const response = await callApi(`/v1/swarms/${swarmId}`, { token });
  return DispatchSchema.parse(await response.json()).dispatch;
}

/** Plays one lane by hand that has timed its calls: it takes every task and reports each a success. */
async function runTimedLane(swarmId: string, tasks: number, timing: { ttfbMs: number; latencyMs: number }, slots: number): Promise<void> {
  const lane = { ticket: "timed-lane", slots, final: false, timing };
  const pulled = await room(swarmId).pull({ ...lane, reports: [], want: tasks });
  const reports: TaskReport[] = pulled.granted.map((task) => ({
    taskId: task.taskId,
    attempt: task.attempt,
    outcome: { kind: "succeeded", output: "done", finishReason: "stop" },
    calls: [],
  }));
  await room(swarmId).pull({ ...lane, reports, want: 0, final: true });
}

const succeeded = (tasks: readonly { taskId: string; attempt: number }[]): TaskReport[] =>
  tasks.map((task) => ({ taskId: task.taskId, attempt: task.attempt, outcome: { kind: "succeeded", output: "done", finishReason: "stop" }, calls: [] }));

async function indexedLanes(swarmId: string): Promise<{ lane_slots: number | null; lane_latency_ms: number | null; lane_ttfb_ms: number | null } | null> {
  return env.LEDGER_DB.prepare("SELECT lane_slots, lane_latency_ms, lane_ttfb_ms FROM swarms WHERE id = ?1").bind(swarmId).first();
}

describe("a swarm's first lanes, sized on the tenant's last swarm of the model", () => {
  it("writes what the lanes measured to the index, and the next swarm opens the lanes that carry its window", async () => {
    const { key } = await createTenantKey({ name: "lane-prior", scopes: ["run"] });
    // No prior yet: the window of 100 starts header-bound, 17 lanes of 6.
    const first = await startSwarm(key, 20, 100);
    expect(await dispatchOf(first, key)).toMatchObject({ lanes: 4, slots: 24 });
    await runTimedLane(first, 20, { ttfbMs: 2, latencyMs: 480 }, 64);
    for (let i = 0; i < 50 && (await indexedLanes(first))?.lane_slots !== 64; i += 1) await runDurableObjectAlarm(room(first));
    expect(await indexedLanes(first)).toEqual({ lane_slots: 64, lane_latency_ms: 480, lane_ttfb_ms: 2 });

    // The tenant's next swarm of mock-1: two lanes of 64 carry a window of 100.
    const next = await startSwarm(key, 200, 100);
    expect(await dispatchOf(next, key)).toMatchObject({ lanes: 2, slots: 128 });
    // One that fans out once fills its window within a tenth of a call: at 6 calls a lane every
    // 2 ms, the same two lanes. (On the slots alone, 64 at 480 ms would mean headers at 45 ms: 17
    // lanes of 6.)
    expect(await dispatchOf(await startSwarm(key, 100, 100), key)).toMatchObject({ lanes: 2, slots: 128 });

    // A header-bound prior (8 slots once, where most lanes carry 6) changes nothing: still 17 of 6.
    const { key: boundKey } = await createTenantKey({ name: "lane-prior-bound", scopes: ["run"] });
    const bound = await startSwarm(boundKey, 20, 100);
    await runTimedLane(bound, 20, { ttfbMs: 480, latencyMs: 640 }, 8);
    for (let i = 0; i < 50 && (await indexedLanes(bound))?.lane_slots !== 8; i += 1) await runDurableObjectAlarm(room(bound));
    expect(await dispatchOf(await startSwarm(boundKey, 200, 100), boundKey)).toMatchObject({ lanes: 17, slots: 102 });

    // Headers with the answer and long-tailed calls: one lane that drew long calls carried 14 (each
    // call holds a header slot for its time to headers only), but at the swarm's mean timing a lane
    // carries 6 × 666 / 484 = 8. The prior is 8, so the next swarm is not counted for 14 a lane.
    const { key: tailKey } = await createTenantKey({ name: "lane-prior-tail", scopes: ["run"] });
    const tail = await startSwarm(tailKey, 20, 100);
    await runTimedLane(tail, 20, { ttfbMs: 484, latencyMs: 666 }, 14);
    for (let i = 0; i < 50 && (await indexedLanes(tail))?.lane_slots === null; i += 1) await runDurableObjectAlarm(room(tail));
    expect(await indexedLanes(tail)).toEqual({ lane_slots: 8, lane_latency_ms: 666, lane_ttfb_ms: 484 });
    expect(await dispatchOf(await startSwarm(tailKey, 200, 100), tailKey)).toMatchObject({ lanes: 17, slots: 102 });

    // Another tenant's swarm of the same model learns nothing from it.
    const other = await createTenantKey({ name: "lane-prior-other", scopes: ["run"] });
    const unrelated = await startSwarm(other.key, 200, 100);
    expect(await dispatchOf(unrelated, other.key)).toMatchObject({ lanes: 17, slots: 102 });
  });

  it("measures the prior while the swarm still hands tasks out: the slow calls that end its tail do not make the next swarm's lanes look early", async () => {
    const { key } = await createTenantKey({ name: "lane-prior-long-tail", scopes: ["run"] });
    const swarmId = await startSwarm(key, 20, 10);
    const lane = { ticket: "tailed-lane", final: false };
    // The body: 8 slots at the swarm's timing (headers with the answer at 484 ms, calls of 666 ms
    // on average), reported while tasks wait to be handed out.
    const body = { slots: 8, timing: { ttfbMs: 484, latencyMs: 666 } };
    const first = await room(swarmId).pull({ ...lane, ...body, reports: [], want: 10 });
    expect(first.granted).toHaveLength(10);
    const second = await room(swarmId).pull({ ...lane, ...body, reports: succeeded(first.granted), want: 10 });
    expect(second.granted).toHaveLength(10);
    // The tail: nothing waits, and the calls that end last are the slow ones. The lane's moving
    // average says 1.5 s calls, 18 slots; the swarm's moving average ends near it too.
    const tail = { slots: 18, timing: { ttfbMs: 484, latencyMs: 1_500 } };
    for (const task of second.granted) await room(swarmId).pull({ ...lane, ...tail, reports: succeeded([task]), want: 0 });
    await room(swarmId).pull({ ...lane, ...tail, reports: [], want: 0, final: true });
    for (let i = 0; i < 50 && (await indexedLanes(swarmId))?.lane_slots == null; i += 1) await runDurableObjectAlarm(room(swarmId));
    expect(await indexedLanes(swarmId)).toEqual({ lane_slots: 8, lane_latency_ms: 666, lane_ttfb_ms: 484 });
    // So the next swarm opens the 17 header-bound lanes its window needs, not 6 counted for 17.
    expect(await dispatchOf(await startSwarm(key, 200, 100), key)).toMatchObject({ lanes: 17, slots: 102 });
  });
});

describe("SwarmIndex.lanePrior", () => {
  const row = (id: string, overrides: Partial<SwarmIndexRow>): SwarmIndexRow => ({
    id,
    tenant: "tn_prior",
    name: "prior",
    model: "mock-1",
    state: "completed",
    task_count: 10,
    origin: "api",
    metadata: null,
    created_at: Date.now(),
    finished_at: Date.now(),
    succeeded: 10,
    failed: 0,
    cancelled: 0,
    skipped_budget: 0,
    skipped: 0,
    calls: 10,
    prompt_tokens: 0,
    cached_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    cost_usd: 0,
    lane_slots: 6,
    lane_latency_ms: 600,
    lane_ttfb_ms: null,
    ...overrides,
  });
  const now = Date.now();
  const day = 24 * 3_600_000;

  it.each([
    [
      "the newest measured swarm of the model",
      [row("sw_a", { created_at: now - 2_000, lane_slots: 6 }), row("sw_b", { created_at: now - 1_000, lane_slots: 40 })],
      { slots: 40, latencyMs: 600 },
    ],
    [
      "a newer swarm that never timed a call is passed over",
      [row("sw_a", { created_at: now - 2_000 }), row("sw_b", { created_at: now - 1_000, lane_slots: null, lane_latency_ms: null })],
      { slots: 6, latencyMs: 600 },
    ],
    [
      "with the time to headers once measured",
      [row("sw_a", { lane_slots: 36, lane_latency_ms: 3_000, lane_ttfb_ms: 498.5 })],
      { slots: 36, latencyMs: 3_000, ttfbMs: 498.5 },
    ],
    ["another model's lanes are not this one's", [row("sw_a", { model: "mock-2", lane_slots: 128 })], null],
    ["another tenant's lanes are not this one's", [row("sw_a", { tenant: "tn_else", lane_slots: 128 })], null],
    ["a measurement older than a week no longer counts", [row("sw_a", { created_at: now - 8 * day })], null],
    ["no swarm at all", [], null],
  ])("%s", async (_label, rows, expected) => {
    await env.LEDGER_DB.prepare("DELETE FROM swarms WHERE tenant IN ('tn_prior', 'tn_else')").run();
    if (rows.length > 0) await env.LEDGER_DB.batch(rows.map((r) => toSwarmIndexUpsert(env.LEDGER_DB, r)));
    expect(await createSwarmIndex(env.LEDGER_DB).lanePrior("tn_prior", "mock-1")).toEqual(expected);
  });

  it("keeps what a swarm's lanes measured when a later write has no measurement (a room that restarted)", async () => {
    await env.LEDGER_DB.prepare("DELETE FROM swarms WHERE tenant = 'tn_prior'").run();
    await toSwarmIndexUpsert(env.LEDGER_DB, row("sw_kept", { lane_slots: 64, lane_latency_ms: 480, lane_ttfb_ms: 2 })).run();
    await toSwarmIndexUpsert(env.LEDGER_DB, row("sw_kept", { lane_slots: null, lane_latency_ms: null, lane_ttfb_ms: null, succeeded: 9 })).run();
    expect(await createSwarmIndex(env.LEDGER_DB).lanePrior("tn_prior", "mock-1")).toEqual({ slots: 64, latencyMs: 480, ttfbMs: 2 });
  });
});
