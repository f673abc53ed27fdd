// SwarmRoom, driven through its RPC surface with the real local Durable Object, queue producer
// and D1: windowed dispatch, idempotent claim/record, retries, leases, completion, ledger flush.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { StartSwarmInput, TaskOutcome, TaskReport } from "../core/swarm-contract.ts";
import { LimitsSchema } from "../core/spec-schema.ts";

const TENANT = "tk_test";
let counter = 0;

function newSwarm(
  taskCount: number,
  limits: Partial<{ concurrency: number; max_attempts: number; timeout_s: number; long_timeout_s: number; retry_budget: number; max_output_tokens: number }> = {},
  extra: { model?: string; fallback?: string[] } = {},
) {
  counter += 1;
  const swarmId = `sw_roomtest${Date.now().toString(36)}${counter}`;
  const input: StartSwarmInput = {
    swarmId,
    tenant: TENANT,
    spec: { name: `room test ${counter}`, model: extra.model ?? "mock-1", fallback: extra.fallback, limits: LimitsSchema.parse(limits) },
    tasks: Array.from({ length: taskCount }, (_, i) => ({ id: `task-${String(i + 1).padStart(3, "0")}`, prompt: `prompt ${i + 1}` })),
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  return { swarmId, input, stub };
}

type Stub = ReturnType<typeof newSwarm>["stub"];

async function taskStates(stub: Stub): Promise<Record<string, string>> {
  return runInDurableObject(stub, (_instance, state) => {
    const out: Record<string, string> = {};
    for (const row of state.storage.sql.exec<{ id: string; state: string }>("SELECT id, state FROM tasks ORDER BY seq")) {
      out[row.id] = row.state;
    }
    return out;
  });
}

function countStates(states: Record<string, string>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of Object.values(states)) counts[s] = (counts[s] ?? 0) + 1;
  return counts;
}

const usage = { prompt_tokens: 20, cached_tokens: 5, completion_tokens: 10, reasoning_tokens: 0, total_tokens: 30 };
const ok = (text: string): TaskOutcome => ({ kind: "succeeded", output: text, finishReason: "stop" });
const rateLimited: TaskOutcome = { kind: "failed", class: "rate_limited", retryable: true, retryAfterMs: 2_000, message: "429 Too Many Requests" };
const unauthorized: TaskOutcome = { kind: "failed", class: "auth", retryable: false, retryAfterMs: null, message: "401 Unauthorized" };

function report(taskId: string, attempt: number, outcome: TaskOutcome, withUsage = true, model = "mock-1"): TaskReport {
  return {
    taskId,
    attempt,
    outcome,
    calls: [
      {
        turn: 1,
        model,
        usage: withUsage ? usage : null,
        latencyMs: 100 + attempt,
        status: outcome.kind === "succeeded" ? "ok" : "error",
        errorClass: outcome.kind === "failed" ? outcome.class : null,
        startedAt: Date.now(),
      },
    ],
  };
}

describe("SwarmRoom windowed dispatch", () => {
  it("keeps at most W tasks in flight and releases the next one when a task finishes", async () => {
    const { input, stub } = newSwarm(10, { concurrency: 3 });
    expect(await stub.start(input)).toEqual({ created: true });
    expect(countStates(await taskStates(stub))).toEqual({ dispatched: 3, pending: 7 });

    const claim = await stub.claim(["task-001", "task-002", "task-003"]);
    expect(claim.granted.map((g) => [g.taskId, g.attempt, g.prompt])).toEqual([
      ["task-001", 1, "prompt 1"],
      ["task-002", 1, "prompt 2"],
      ["task-003", 1, "prompt 3"],
    ]);
    expect(countStates(await taskStates(stub))).toEqual({ running: 3, pending: 7 });

    await stub.recordResults([report("task-001", 1, ok("one"))]);
    const states = await taskStates(stub);
    expect(countStates(states)).toEqual({ succeeded: 1, running: 2, dispatched: 1, pending: 6 });
    expect(states["task-004"]).toBe("dispatched");
  });

  it("is idempotent by swarm id", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    expect(await stub.start(input)).toEqual({ created: false });
    expect(Object.keys(await taskStates(stub))).toHaveLength(2);
  });
});

describe("SwarmRoom claim", () => {
  it("hands a task out once: leased and finished tasks are refused, unknown ids say so", async () => {
    const { input, stub } = newSwarm(3, { concurrency: 2 });
    await stub.start(input);
    const first = await stub.claim(["task-001"]);
    expect(first.config).toMatchObject({ model: "mock-1", system: null, responseFormat: null });
    expect(first.granted).toHaveLength(1);

    const again = await stub.claim(["task-001", "task-003", "nope"]);
    expect(again.granted).toEqual([]);
    expect(again.refused).toEqual([
      { taskId: "task-001", reason: "leased" },
      { taskId: "task-003", reason: "unknown" }, // still pending: the window has not released it
      { taskId: "nope", reason: "unknown" },
    ]);

    await stub.recordResults([report("task-001", 1, ok("done"))]);
    const afterDone = await stub.claim(["task-001"]);
    expect(afterDone.refused).toEqual([{ taskId: "task-001", reason: "done" }]);
  });

  it("leases for every round of calls the claimer needs (waves × timeout_s + grace)", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 2, timeout_s: 10 });
    await stub.start(input);
    const before = Date.now();
    const one = await stub.claim(["task-001"]);
    const three = await stub.claim(["task-002"], { waves: 3 });
    // LEASE_GRACE_S is 30 in wrangler.toml.
    expect(one.granted[0]?.leaseUntil).toBeGreaterThanOrEqual(before + 10_000 + 30_000);
    expect(three.granted[0]?.leaseUntil).toBeGreaterThanOrEqual(before + 3 * 10_000 + 30_000);
    expect(three.granted[0]?.leaseUntil).toBeLessThan(before + 4 * 10_000 + 30_000);
  });

  it("defers tasks once a claim's prompts would not fit one RPC answer", async () => {
    const { input, stub } = newSwarm(3, { concurrency: 3 });
    const big = "x".repeat(4_500_000);
    input.tasks = input.tasks.map((task) => ({ ...task, prompt: big }));
    await stub.start(input);
    const claim = await stub.claim(["task-001", "task-002", "task-003"]);
    expect(claim.granted.map((g) => g.taskId)).toEqual(["task-001"]);
    expect(claim.refused).toEqual([
      { taskId: "task-002", reason: "deferred" },
      { taskId: "task-003", reason: "deferred" },
    ]);
    // Deferred tasks stay dispatched and are granted on the next delivery.
    expect(countStates(await taskStates(stub))).toEqual({ running: 1, dispatched: 2 });
    expect((await stub.claim(["task-002"])).granted.map((g) => g.taskId)).toEqual(["task-002"]);
  });

  it("answers a claim for a swarm that was never started with no config", async () => {
    const { stub } = newSwarm(1);
    const claim = await stub.claim(["task-001"]);
    expect(claim).toEqual({ config: null, granted: [], refused: [{ taskId: "task-001", reason: "unknown" }] });
  });
});

describe("SwarmRoom recordResults", () => {
  it("records a report once, however often it is delivered", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    await stub.claim(["task-001"]);
    const r = report("task-001", 1, ok("answer"));
    expect((await stub.recordResults([r])).actions).toEqual([{ taskId: "task-001", action: "ack", delaySeconds: 0 }]);
    expect((await stub.recordResults([r])).actions).toEqual([{ taskId: "task-001", action: "ack", delaySeconds: 0 }]);
    const calls = await runInDurableObject(stub, (_i, state) => state.storage.sql.exec("SELECT * FROM calls").toArray().length);
    expect(calls).toBe(1);
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ task_id: "task-001", state: "succeeded", output: "answer", attempts: 1 });
    expect(page?.results[0]?.usage).toEqual({ calls: 1, prompt_tokens: 20, cached_tokens: 5, completion_tokens: 10, total_tokens: 30 });
  });

  it("records calls ahead of their outcome (a consumer that dies later loses no billed usage), once", async () => {
    const { input, stub } = newSwarm(1);
    await stub.start(input);
    await stub.claim(["task-001"]);
    const r = report("task-001", 1, ok("answer"));
    await stub.recordCalls([{ taskId: r.taskId, attempt: r.attempt, calls: r.calls }]);
    expect((await taskStates(stub))["task-001"]).toBe("running");
    expect((await stub.getStatus(TENANT))?.usage.calls).toBe(1);
    await stub.recordResults([r]);
    const status = await stub.getStatus(TENANT);
    expect(status?.usage).toMatchObject({ calls: 1, total_tokens: 30 });
    expect(status?.state).toBe("completed");
  });

  it("asks for a retry with back-off on a retryable failure, and fails the task after max_attempts", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 2 });
    await stub.start(input);
    await stub.claim(["task-001"]);
    const first = await stub.recordResults([report("task-001", 1, rateLimited)]);
    expect(first.actions[0]).toMatchObject({ taskId: "task-001", action: "retry" });
    // Retry-After (2 s) is a floor for the delay.
    expect(first.actions[0]?.delaySeconds).toBeGreaterThanOrEqual(2);
    expect((await taskStates(stub))["task-001"]).toBe("retry_wait");

    const second = await stub.claim(["task-001"]);
    expect(second.granted.map((g) => g.attempt)).toEqual([2]);
    const last = await stub.recordResults([report("task-001", 2, rateLimited)]);
    expect(last.actions).toEqual([{ taskId: "task-001", action: "ack", delaySeconds: 0 }]);
    const status = await stub.getStatus(TENANT);
    expect(status?.state).toBe("completed_with_failures");
    expect(status?.counts).toMatchObject({ failed: 1, succeeded: 0, queued: 0, running: 0 });
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ state: "failed", attempts: 2, error: { class: "rate_limited" } });
    expect(page?.results[0]?.usage.calls).toBe(2);
  });

  it("fails a task at once on a permanent failure", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 4 });
    await stub.start(input);
    await stub.claim(["task-001"]);
    const response = await stub.recordResults([report("task-001", 1, unauthorized)]);
    expect(response.actions[0]?.action).toBe("ack");
    expect((await taskStates(stub))["task-001"]).toBe("failed");
  });

  it("keeps a late success from an older attempt but ignores its late failure", async () => {
    const { input, stub } = newSwarm(2, { max_attempts: 3 });
    await stub.start(input);
    for (const id of ["task-001", "task-002"]) {
      await stub.claim([id]);
      await stub.recordResults([report(id, 1, rateLimited)]);
      await stub.claim([id]); // attempt 2 now running
    }
    await stub.recordResults([report("task-001", 1, ok("late but good"))]);
    await stub.recordResults([report("task-002", 1, unauthorized)]);
    const states = await taskStates(stub);
    expect(states).toEqual({ "task-001": "succeeded", "task-002": "running" });
  });
});

describe("SwarmRoom agent checkpoints", () => {
  const deferred: TaskOutcome = { kind: "deferred", retryAfterMs: 0, reason: "no time left in this consumer invocation for turn 3" };
  const checkpoint = (turns: number) => ({ step: 1 + 2 * turns, turns, toolCalls: turns, repairs: 0, messages_json: JSON.stringify([{ role: "user", content: `after ${turns}` }]) });
  const turnCall = (turn: number) => ({ turn, model: "mock-1", usage, latencyMs: 10, status: "ok" as const, errorClass: null, startedAt: Date.now() });

  it("a retried attempt hands its checkpoint to the next claim; an older one never overwrites a newer one", async () => {
    const { input, stub } = newSwarm(1);
    await stub.start(input);
    const first = await stub.claim(["task-001"]);
    expect(first.granted[0]?.checkpoint).toBeNull();
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [turnCall(1), turnCall(2)], checkpoint: checkpoint(2) }]);
    // A late flush of an older checkpoint of the same attempt changes nothing.
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [], checkpoint: checkpoint(1) }]);
    await stub.recordResults([{ taskId: "task-001", attempt: 1, outcome: rateLimited, calls: [{ ...turnCall(3), status: "error", errorClass: "rate_limited", usage: null }], checkpoint: checkpoint(2) }]);
    await runDurableObjectAlarm(stub);
    const second = await stub.claim(["task-001"]);
    expect(second.granted[0]).toMatchObject({ attempt: 2, checkpoint: checkpoint(2) });
    // A checkpoint from the superseded attempt 1 is refused.
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [], checkpoint: checkpoint(5) }]);
    await stub.recordResults([{ taskId: "task-001", attempt: 2, outcome: ok("done"), calls: [turnCall(3), turnCall(4)], toolCalls: 3 }]);
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ state: "succeeded", attempts: 2, tool_calls: 3, usage: { calls: 5 } });
  });

  it("a deferral after some turns keeps its attempt number (its call ids are taken); one before any call hands it back", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    await stub.claim(["task-001", "task-002"]);
    await stub.recordResults([
      { taskId: "task-001", attempt: 1, outcome: deferred, calls: [turnCall(1), turnCall(2)], checkpoint: checkpoint(2) },
      { taskId: "task-002", attempt: 1, outcome: deferred, calls: [] },
    ]);
    const again = await stub.claim(["task-001", "task-002"]);
    expect(again.granted.map((g) => [g.taskId, g.attempt, g.checkpoint?.turns ?? null])).toEqual([
      ["task-001", 2, 2],
      ["task-002", 1, null],
    ]);
  });
});

describe("SwarmRoom alarm", () => {
  it("re-dispatches a task whose lease expired, and fails it when no attempt is left", async () => {
    const { input, stub } = newSwarm(2, { max_attempts: 2 });
    await stub.start(input);
    await stub.claim(["task-001", "task-002"]);
    // Both leases run out; task-002 is on its last attempt.
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec("UPDATE tasks SET deadline = ?", Date.now() - 1);
      state.storage.sql.exec("UPDATE tasks SET attempts = 2 WHERE id = 'task-002'");
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await taskStates(stub)).toEqual({ "task-001": "dispatched", "task-002": "failed" });
    const claim = await stub.claim(["task-001"]);
    expect(claim.granted.map((g) => g.attempt)).toEqual([2]);
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[1]?.error?.class).toBe("lease_expired");
  });

  it("flushes ledger rows and the swarm index to D1, exactly once however often it runs", async () => {
    const { swarmId, input, stub } = newSwarm(3);
    await stub.start(input);
    await stub.claim(["task-001", "task-002", "task-003"]);
    await stub.recordResults([
      report("task-001", 1, ok("a")),
      report("task-002", 1, ok("b"), false),
      report("task-003", 1, unauthorized),
    ]);
    await runDurableObjectAlarm(stub);
    const ledger = await env.LEDGER_DB.prepare(
      "SELECT call_id, status, error_class, prompt_tokens, total_tokens, cost_usd FROM ledger WHERE swarm_id = ? ORDER BY call_id",
    )
      .bind(swarmId)
      .all();
    expect(ledger.results).toEqual([
      { call_id: `${swarmId}:task-001:1:1`, status: "ok", error_class: null, prompt_tokens: 20, total_tokens: 30, cost_usd: expect.any(Number) },
      // No usage from the upstream: recorded as missing, not as zero.
      { call_id: `${swarmId}:task-002:1:1`, status: "ok", error_class: null, prompt_tokens: null, total_tokens: null, cost_usd: null },
      { call_id: `${swarmId}:task-003:1:1`, status: "error", error_class: "auth", prompt_tokens: 20, total_tokens: 30, cost_usd: expect.any(Number) },
    ]);
    // mock-1: (15 × 0.1 + 5 × 0.01 + 10 × 0.4) / 1e6 USD
    expect(ledger.results[0]?.cost_usd).toBeCloseTo(5.55e-6, 12);

    // A second flush of the same rows (as after a crash between the D1 write and the local mark) adds nothing.
    await runInDurableObject(stub, (_i, state) => state.storage.sql.exec("UPDATE calls SET flushed = 0"));
    await runInDurableObject(stub, async (instance) => {
      await instance.alarm();
    });
    const count = await env.LEDGER_DB.prepare("SELECT COUNT(*) AS n FROM ledger WHERE swarm_id = ?").bind(swarmId).first<{ n: number }>();
    expect(count?.n).toBe(3);

    const index = await env.LEDGER_DB.prepare("SELECT state, succeeded, failed, calls, total_tokens FROM swarms WHERE id = ?")
      .bind(swarmId)
      .first();
    expect(index).toEqual({ state: "completed_with_failures", succeeded: 2, failed: 1, calls: 3, total_tokens: 60 });
  });
});

describe("SwarmRoom reading", () => {
  it("hides a swarm from other tenants and pages results in task order", async () => {
    const { input, stub } = newSwarm(5, { concurrency: 5 });
    await stub.start(input);
    expect(await stub.getStatus("tk_other")).toBeNull();
    expect(await stub.getResults("tk_other", null, 10)).toBeNull();

    const first = await stub.getResults(TENANT, null, 2);
    expect(first?.results.map((r) => r.task_id)).toEqual(["task-001", "task-002"]);
    const second = await stub.getResults(TENANT, first?.next_cursor ?? null, 2);
    expect(second?.results.map((r) => r.task_id)).toEqual(["task-003", "task-004"]);
    const third = await stub.getResults(TENANT, second?.next_cursor ?? null, 2);
    expect(third?.results.map((r) => r.task_id)).toEqual(["task-005"]);
    expect(third?.next_cursor).toBeNull();
  });

  it("reports completion with counts, usage, latency percentiles and the collected output in task order", async () => {
    const { input, stub } = newSwarm(3, { concurrency: 3 });
    await stub.start(input);
    await stub.claim(["task-003", "task-001", "task-002"]);
    await stub.recordResults([report("task-003", 1, ok("c")), report("task-001", 1, ok("a")), report("task-002", 1, ok("b"))]);
    const status = await stub.getStatus(TENANT);
    expect(status).toMatchObject({
      state: "completed",
      tasks: 3,
      counts: { queued: 0, running: 0, succeeded: 3, failed: 0, cancelled: 0, skipped_budget: 0 },
      usage: { calls: 3, prompt_tokens: 60, cached_tokens: 15, completion_tokens: 30, total_tokens: 90 },
      latency_ms: { p50: 101, p95: 101 },
      output: { results: [{ task_id: "task-001", output: "a" }, { task_id: "task-002", output: "b" }, { task_id: "task-003", output: "c" }], truncated: false },
    });
    expect(status?.finished_at).not.toBeNull();
  });

  it("ends still-open tasks failed when their message was dead-lettered", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 2 });
    await stub.start(input);
    await stub.recordDeadLetter(["task-001", "task-002"]);
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results.map((r) => [r.state, r.error?.class])).toEqual([
      ["failed", "dead_letter"],
      ["failed", "dead_letter"],
    ]);
    expect((await stub.getStatus(TENANT))?.state).toBe("completed_with_failures");
  });
});

const upstream500: TaskOutcome = { kind: "failed", class: "upstream_error", retryable: true, retryAfterMs: null, message: "500 Internal Server Error" };

describe("SwarmRoom resilience", () => {
  it("routes to the fallback while the primary's circuit is open, and parks tasks when every circuit is open", async () => {
    const { input, stub } = newSwarm(12, { concurrency: 6, max_attempts: 4 }, { model: "primary", fallback: ["backup"] });
    await stub.start(input);
    const ids = ["task-001", "task-002", "task-003", "task-004", "task-005"];
    const first = await stub.claim(ids);
    expect(first.granted.map((g) => g.model)).toEqual(["primary", "primary", "primary", "primary", "primary"]);
    // Five upstream failures in a row open the primary's circuit.
    await stub.recordResults(ids.map((id) => report(id, 1, upstream500, false, "primary")));
    let status = await stub.getStatus(TENANT);
    expect(status?.circuits).toEqual([
      { model: "primary", state: "open", failures: 5, retry_at: expect.any(String) },
      { model: "backup", state: "closed", failures: 0, retry_at: null },
    ]);

    const second = await stub.claim(ids);
    expect(second.granted.map((g) => [g.model, g.attempt])).toEqual(ids.map(() => ["backup", 2]));
    await stub.recordResults(ids.map((id) => report(id, 2, upstream500, false, "backup")));

    // Both circuits open: a claim parks the task (back to pending) and dispatch stops.
    const third = await stub.claim(["task-001", "task-006"]);
    expect(third.granted).toEqual([]);
    expect(third.refused).toEqual([
      { taskId: "task-001", reason: "parked" },
      { taskId: "task-006", reason: "parked" },
    ]);
    const states = await taskStates(stub);
    expect(states["task-001"]).toBe("pending");
    expect(states["task-006"]).toBe("pending");
    status = await stub.getStatus(TENANT);
    expect(status?.reason).toMatch(/every model's circuit is open \(primary, backup\)/);
    expect(status?.state).toBe("running");
  });

  it("halves the window on a rate-limited round and grows it back with successes", async () => {
    const { input, stub } = newSwarm(40, { concurrency: 8 });
    await stub.start(input);
    const ids = Array.from({ length: 8 }, (_, i) => `task-${String(i + 1).padStart(3, "0")}`);
    await stub.claim(ids);
    await stub.recordResults([report("task-001", 1, rateLimited), ...ids.slice(1).map((id) => report(id, 1, ok(id)))]);
    const status = await stub.getStatus(TENANT);
    expect(status?.window).toBe(5); // ⌊8 × 0.7⌋
    expect(status?.max_window).toBe(8);
    // In flight never exceeds the shrunken window (the retrying task holds a place).
    const counts = countStates(await taskStates(stub));
    expect((counts.dispatched ?? 0) + (counts.running ?? 0) + (counts.retry_wait ?? 0)).toBe(5);

    const next = Object.entries(await taskStates(stub)).filter(([, s]) => s === "dispatched").map(([id]) => id);
    await stub.claim(next);
    await stub.recordResults(next.map((id) => report(id, 1, ok(id))));
    expect((await stub.getStatus(TENANT))?.window).toBe(5); // 4 successes at W=5: not yet +1
    const more = Object.entries(await taskStates(stub)).filter(([, s]) => s === "dispatched").map(([id]) => id);
    await stub.claim(more);
    await stub.recordResults(more.map((id) => report(id, 1, ok(id))));
    expect((await stub.getStatus(TENANT))?.window).toBe(6);
  });

  it("spends the swarm's retry budget, then ends retryable failures instead of retrying them", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 2, retry_budget: 1 });
    await stub.start(input);
    await stub.claim(["task-001", "task-002"]);
    const response = await stub.recordResults([report("task-001", 1, rateLimited), report("task-002", 1, rateLimited)]);
    expect(response.actions.map((a) => a.action)).toEqual(["retry", "ack"]);
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[1]).toMatchObject({ state: "failed", error: { class: "rate_limited" } });
    expect(page?.results[1]?.error?.message).toMatch(/retry budget of 1 is spent/);
    expect((await stub.getStatus(TENANT))?.retries).toEqual({ used: 1, budget: 1 });
  });

  it("cancel stops dispatch, lets running tasks finish and be recorded, and ends the rest cancelled", async () => {
    const { input, stub } = newSwarm(5, { concurrency: 2 });
    await stub.start(input);
    await stub.claim(["task-001", "task-002"]);
    const cancelled = await stub.cancel(TENANT);
    expect(cancelled?.changed).toBe(true);
    expect(cancelled?.status).toMatchObject({ state: "cancelled", counts: { running: 2, cancelled: 3, queued: 0 }, finished_at: null });
    expect(await stub.cancel("tk_other")).toBeNull();

    // In-flight calls finish and are recorded; a retryable failure is not retried any more.
    const response = await stub.recordResults([report("task-001", 1, ok("kept")), report("task-002", 1, rateLimited)]);
    expect(response.actions.map((a) => a.action)).toEqual(["ack", "ack"]);
    expect(await taskStates(stub)).toEqual({
      "task-001": "succeeded",
      "task-002": "cancelled",
      "task-003": "cancelled",
      "task-004": "cancelled",
      "task-005": "cancelled",
    });
    const status = await stub.getStatus(TENANT);
    expect(status).toMatchObject({ state: "cancelled", reason: "cancelled by request", usage: { calls: 2 } });
    expect(status?.finished_at).not.toBeNull();
    expect((await stub.claim(["task-003"])).refused).toEqual([{ taskId: "task-003", reason: "done" }]);
    expect((await stub.cancel(TENANT))?.changed).toBe(false);
  });

  it("gives a long task the long timeout and a lease to match", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 2, timeout_s: 10, long_timeout_s: 300 });
    input.tasks = input.tasks.map((task, i) => (i === 1 ? { ...task, long: true } : task));
    await stub.start(input);
    const before = Date.now();
    const claim = await stub.claim(["task-001", "task-002"]);
    expect(claim.granted.map((g) => [g.taskId, g.timeoutS])).toEqual([
      ["task-001", 10],
      ["task-002", 300],
    ]);
    expect(claim.granted[1]?.leaseUntil).toBeGreaterThanOrEqual(before + 300_000);
  });
});

describe("SwarmRoom economics", () => {
  it("stops a swarm at its USD budget: spend never over, the rest skipped_budget, and it says why", async () => {
    // mock-1 worst case per call: (8 prompt bytes + 16) × $0.1/MTok + 64 × $0.4/MTok = $0.000028.
    const { input, stub } = newSwarm(20, { concurrency: 10, max_output_tokens: 64 });
    input.spec = { ...input.spec, budget: { max_usd: 0.0001, fallback_at: 0.2 } };
    await stub.start(input);
    expect(countStates(await taskStates(stub))).toEqual({ dispatched: 3, pending: 17 });

    for (let round = 0; round < 20; round += 1) {
      const dispatched = Object.entries(await taskStates(stub)).filter(([, s]) => s === "dispatched").map(([id]) => id);
      if (dispatched.length === 0) break;
      const claim = await stub.claim(dispatched);
      await stub.recordResults(claim.granted.map((g) => report(g.taskId, g.attempt, ok("x"))));
    }
    const status = await stub.getStatus(TENANT);
    expect(status?.state).toBe("completed_with_failures");
    expect(status?.counts.succeeded).toBeGreaterThan(0);
    expect(status?.counts.skipped_budget).toBe(20 - (status?.counts.succeeded ?? 0));
    expect(status?.cost_usd).toBeLessThanOrEqual(0.0001);
    expect(status?.budget?.charged_usd).toBeLessThanOrEqual(0.0001);
    expect(status?.budget?.reserved_usd).toBe(0);
    expect(status?.reason).toMatch(/^budget exhausted: \$0\.0000\d+ of \$0\.0001 spent, the next call may cost up to \$0\.000028/);
  });

  it("refuses a USD budget over a model that has no price", async () => {
    const { input, stub } = newSwarm(1, {}, { model: "no-such-model" });
    input.spec = { ...input.spec, budget: { max_usd: 1, fallback_at: 0.2 } };
    const result = await stub.start(input);
    expect(result.created).toBe(false);
    expect(result.refused?.[0]?.path).toBe("budget.max_usd");
    expect(await stub.getStatus(TENANT)).toBeNull();
  });

  it("routes each task of a weighted mix to its model, the same way on every claim", async () => {
    const { input, stub } = newSwarm(30, { concurrency: 30 });
    input.spec = { ...input.spec, model: [{ model: "deepseek-v3.2", weight: 2 }, { model: "kimi-k2.5", weight: 1 }] };
    await stub.start(input);
    const ids = input.tasks.map((t) => t.id);
    const claim = await stub.claim(ids);
    const models = new Set(claim.granted.map((g) => g.model));
    expect(models).toEqual(new Set(["deepseek-v3.2", "kimi-k2.5"]));
    const status = await stub.getStatus(TENANT);
    expect(status?.model).toBe("deepseek-v3.2:2,kimi-k2.5:1");
    expect(status?.models).toEqual([
      { model: "deepseek-v3.2", weight: 2 },
      { model: "kimi-k2.5", weight: 1 },
    ]);
  });
});

describe("SwarmRoom tenant monthly budget", () => {
  // The orchestrator project caps tenant tk_0000000000c0ffee at $0.0001 a month (vitest.config.ts).
  const CAPPED = "tk_0000000000c0ffee";

  it("reserves a swarm's worst case against its tenant's month, runs under the grant, and settles the real spend", async () => {
    const first = newSwarm(20, { concurrency: 10, max_output_tokens: 64, max_attempts: 1 });
    first.input.tenant = CAPPED;
    expect(await first.stub.start(first.input)).toEqual({ created: true });
    const status = await first.stub.getStatus(CAPPED);
    // 20 tasks × $0.000028 worst case is more than the month's $0.0001: the grant caps the swarm.
    expect(status?.budget?.max_usd).toBeCloseTo(0.0001, 12);

    for (let round = 0; round < 20; round += 1) {
      const dispatched = Object.entries(await taskStates(first.stub)).filter(([, s]) => s === "dispatched").map(([id]) => id);
      if (dispatched.length === 0) break;
      const claim = await first.stub.claim(dispatched);
      await first.stub.recordResults(claim.granted.map((g) => report(g.taskId, g.attempt, ok("x"))));
    }
    const end = await first.stub.getStatus(CAPPED);
    expect(end?.counts.skipped_budget).toBeGreaterThan(0);
    expect(end?.cost_usd).toBeLessThanOrEqual(0.0001);
    await runDurableObjectAlarm(first.stub); // settles the tenant's month
    const month = env.TENANT_BUDGET.get(env.TENANT_BUDGET.idFromName(`${CAPPED}:${new Date(first.input.createdAt).toISOString().slice(0, 7)}`));
    const settled = await month.status();
    expect(settled.committedUsd).toBeCloseTo(end?.cost_usd ?? -1, 12);

    // What is left of the month no longer covers a call: the next swarm is refused.
    const second = newSwarm(5, { max_output_tokens: 64 });
    second.input.tenant = CAPPED;
    const refused = await second.stub.start(second.input);
    expect(refused).toMatchObject({ created: false, code: "budget_exceeded", refused: [{ path: "budget" }] });
  });

  it("leaves uncapped tenants alone", async () => {
    const { input, stub } = newSwarm(3);
    await stub.start(input);
    expect((await stub.getStatus(TENANT))?.budget).toBeNull();
  });
});

describe("SwarmRoom budget fallback tier", () => {
  // The orchestrator project's GATEWAY_CONFIG has "mock-economy" in tier "economy" (vitest.config.ts).
  it("routes tasks to the cheapest model of the fallback tier once the spend passes the threshold", async () => {
    const { input, stub } = newSwarm(30, { concurrency: 3, max_output_tokens: 64 });
    input.spec = { ...input.spec, budget: { max_usd: 0.0001, fallback_tier: "economy", fallback_at: 0.5 } };
    expect(await stub.start(input)).toEqual({ created: true });
    const models: string[] = [];
    for (let round = 0; round < 40; round += 1) {
      const dispatched = Object.entries(await taskStates(stub)).filter(([, s]) => s === "dispatched").map(([id]) => id);
      if (dispatched.length === 0) break;
      const claim = await stub.claim(dispatched);
      models.push(...claim.granted.map((g) => g.model));
      await stub.recordResults(claim.granted.map((g) => report(g.taskId, g.attempt, ok("x"), true, g.model)));
    }
    const firstEconomy = models.indexOf("mock-economy");
    expect(firstEconomy).toBeGreaterThan(0);
    expect(models.slice(0, firstEconomy).every((m) => m === "mock-1")).toBe(true);
    expect(models.slice(firstEconomy).every((m) => m === "mock-economy")).toBe(true);
    const status = await stub.getStatus(TENANT);
    expect(status?.budget).toMatchObject({ fallback_tier: "economy", routing_to_fallback_tier: true });
    expect(status?.cost_usd).toBeLessThanOrEqual(0.0001);
  });

  it("refuses a fallback tier that no gateway model has", async () => {
    const { input, stub } = newSwarm(1);
    input.spec = { ...input.spec, budget: { max_usd: 1, fallback_tier: "bargain", fallback_at: 0.2 } };
    const result = await stub.start(input);
    expect(result).toMatchObject({ created: false, refused: [{ path: "budget.fallback_tier", message: expect.stringContaining("tiers: premium, economy") }] });
  });
});
