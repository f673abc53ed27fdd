// The SwarmRoom's backups (limits.hedge), through its RPC surface on the real local Durable Object
// and D1, the lanes played by hand: the delay a pull carries (finished calls and running ones), the
// limit and the share kept for the tail, the budget's reservation, and that both calls of a hedged
// turn are ledger rows (an aborted one as an estimate, marked) that reach D1 marked as backups.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { HEDGE_MIN_SAMPLES } from "../core/hedge-policy.ts";
import { LimitsSchema } from "../core/spec-schema.ts";
import type { CallRecord, CallStart, ClaimedTask, PullRequest, StartSwarmInput, TaskReport } from "../core/swarm-contract.ts";
import { seedUnevenCalls } from "./uneven-calls-fixture.ts";

let counter = 0;

async function startedSwarm(tasks: number, limits: Record<string, unknown>, budget?: { max_usd: number }) {
  counter += 1;
  const swarmId = `sw_hedgetest${Date.now().toString(36)}${counter}`;
  const input: StartSwarmInput = {
    swarmId,
    tenant: "tk_test",
    spec: {
      name: `hedge test ${counter}`,
      model: "mock-1",
      limits: LimitsSchema.parse(limits),
      ...(budget === undefined ? {} : { budget: { ...budget, fallback_at: 0.2 } }),
    },
    tasks: Array.from({ length: tasks }, (_, i) => ({ id: `t${String(i + 1).padStart(3, "0")}`, prompt: `prompt ${i + 1}` })),
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toEqual({ created: true });
  return { stub, swarmId };
}

type Stub = Awaited<ReturnType<typeof startedSwarm>>["stub"];

function pullOf(want: number, reports: TaskReport[] = []): PullRequest {
  return { ticket: "lane-1", reports, want, slots: 200, final: false };
}

function call(latencyMs: number, extra: Partial<CallRecord> = {}): CallRecord {
  return {
    turn: 1,
    model: "mock-1",
    usage: { prompt_tokens: 10, cached_tokens: 0, completion_tokens: 5, reasoning_tokens: 0, total_tokens: 15 },
    latencyMs,
    ttfbMs: 1,
    status: "ok",
    errorClass: null,
    startedAt: Date.now() - latencyMs,
    ...extra,
  };
}

function succeeded(task: ClaimedTask, calls: CallRecord[]): TaskReport {
  return { taskId: task.taskId, attempt: task.attempt, outcome: { kind: "succeeded", output: "ok", finishReason: "stop" }, calls };
}

/** The note of a task's first call, as a lane sends it, started `agoMs` ago. */
function startOf(task: ClaimedTask, agoMs = 0): CallStart {
  return { taskId: task.taskId, attempt: task.attempt, turn: 1, model: "mock-1", promptTokens: 10, maxTokens: 16, startedAt: Date.now() - agoMs };
}

function backupOf(task: ClaimedTask): CallStart {
  return { ...startOf(task), hedge: true };
}

/** The room's next read of the delay computes it afresh (it is kept for 200 ms between pulls). */
async function freshThreshold(stub: Stub): Promise<void> {
  await runInDurableObject(stub, (instance) => {
    (instance as unknown as { hedges: { threshold: unknown } }).hedges.threshold = null;
  });
}

/** Grants `n` tasks and reports them finished at latencies 1..n steps of `stepMs`; returns the pull's answer. */
async function finishWithLatencies(stub: Stub, n: number, stepMs = 1) {
  const granted = (await stub.pull(pullOf(n))).granted;
  expect(granted).toHaveLength(n);
  return stub.pull(
    pullOf(
      0,
      granted.map((task, i) => succeeded(task, [call((i + 1) * stepMs)])),
    ),
  );
}

describe("the delay a pull carries", () => {
  it("is absent for a swarm that does not hedge", async () => {
    const { stub } = await startedSwarm(40, { concurrency: 40 });
    const answer = await finishWithLatencies(stub, 30);
    expect(answer.hedgeAfterMs).toBeUndefined();
    expect((await stub.getStatus("tk_test"))?.hedges).toBeNull();
  });

  it("comes once enough calls have finished, as their percentile, and counts calls still running as lasting at least their elapsed time", async () => {
    const { stub } = await startedSwarm(100, { concurrency: 100, hedge: { after: "p50", max_extra: 0.1 } });
    const first = await stub.pull(pullOf(HEDGE_MIN_SAMPLES - 1));
    expect(first.hedgeAfterMs).toBeUndefined();
    const fewer = await stub.pull(
      pullOf(
        0,
        first.granted.map((task, i) => succeeded(task, [call(i + 1)])),
      ),
    );
    expect(fewer.hedgeAfterMs).toBeUndefined();
    // One more finished call: 20 samples of 1..20 ms, p50 = 10 ms.
    const more = (await stub.pull(pullOf(1))).granted;
    await freshThreshold(stub);
    const twenty = await stub.pull(
      pullOf(
        0,
        more.map((task) => succeeded(task, [call(20)])),
      ),
    );
    expect(twenty.hedgeAfterMs).toBe(10);
    // 40 calls noted as started 5 s ago and still running: two thirds of the calls have run longer
    // than any that ended, so the median is past 20 ms and the estimate cannot say where yet: the
    // running calls count at their elapsed time meanwhile, and the median is one of them.
    const running = (await stub.pull(pullOf(40))).granted;
    await stub.startCalls(running.map((task) => startOf(task, 5_000)));
    await freshThreshold(stub);
    const withRunning = await stub.pull(pullOf(0));
    expect(withRunning.hedgeAfterMs).toBeGreaterThanOrEqual(4_900);
    expect(withRunning.hedgeAfterMs).toBeLessThan(6_000);
    // 10 of them end at 6 s; the other 30, still running at 5 s, count as ending past 5 s as those
    // did (Kaplan–Meier): the median is 6 s (as if they had ended at 5 s, it would be 5 s).
    await freshThreshold(stub);
    const sixSeconds = await stub.pull(
      pullOf(
        0,
        running.slice(0, 10).map((task) => succeeded(task, [call(6_000)])),
      ),
    );
    expect(sixSeconds.hedgeAfterMs).toBe(6_000);
  });
});

describe("a call's age, in the delay", () => {
  it("leaves out the notes of standby tasks a lane holds, and counts a standby task's call from when it started, not from its grant", async () => {
    const { stub } = await startedSwarm(60, { concurrency: 20, hedge: { after: "p95", max_extra: 0.1 } });
    await finishWithLatencies(stub, 20);
    // A lane takes the window's 20 and standby tasks (its share of what is left); the grant notes
    // every first call now.
    const lane = { lane: "lane-a", slots: 20 };
    const granted = (await stub.pull({ ...pullOf(20), ...lane, seq: 1, sentAt: Date.now(), standby: 20, running: 0 })).granted;
    const held = granted.filter((task) => task.standby === true);
    // Half start in ended tasks' places, the others in the window's room: enough of each to be the
    // p95 of about 45 calls.
    expect(held.length).toBeGreaterThanOrEqual(6);
    const half = Math.floor(held.length / 2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // The window's calls end (21..40 ms); the standby tasks, noted 500 ms ago, are still held.
    const window = granted.filter((task) => task.standby !== true);
    const heldIds = held.map((task) => ({ taskId: task.taskId, attempt: task.attempt }));
    await stub.pull({
      ...pullOf(
        0,
        window.map((task, i) => succeeded(task, [call(21 + i)])),
      ),
      ...lane,
      seq: 2,
      sentAt: Date.now(),
      held: heldIds,
    });
    await freshThreshold(stub);
    // 40 finished calls of 1..40 ms: the held notes' 500 ms are no call's.
    expect((await stub.getStatus("tk_test"))?.hedges?.after_ms).toBeLessThanOrEqual(40);
    // Half start now in ended tasks' places: their calls are new, not 500 ms old.
    const promoted = heldIds.slice(0, half).map((task) => ({ ...task, startedAt: Date.now() }));
    await stub.pull({ ...pullOf(0), ...lane, seq: 3, sentAt: Date.now(), running: half, promoted, held: heldIds.slice(half) });
    await freshThreshold(stub);
    expect((await stub.getStatus("tk_test"))?.hedges?.after_ms).toBeLessThan(250);
    // The window has room for the others: they run from this answer on.
    const rest = heldIds.length - half;
    const answer = await stub.pull({ ...pullOf(rest), ...lane, seq: 4, sentAt: Date.now(), running: half, held: heldIds.slice(half) });
    expect(answer.run).toHaveLength(rest);
    await freshThreshold(stub);
    expect((await stub.getStatus("tk_test"))?.hedges?.after_ms).toBeLessThan(250);
  });
});

describe("a backup's grant", () => {
  it("is refused for a swarm that does not hedge, and for a task that is not running that attempt", async () => {
    const { stub } = await startedSwarm(5, { concurrency: 5 });
    const [task] = (await stub.pull(pullOf(1))).granted;
    if (task === undefined) throw new Error("no grant");
    expect(await stub.hedgeCall(backupOf(task))).toEqual({ granted: false, reason: "off" });

    const hedging = await startedSwarm(5, { concurrency: 5, hedge: { after: 100, max_extra: 0.5 } });
    const [other] = (await hedging.stub.pull(pullOf(1))).granted;
    if (other === undefined) throw new Error("no grant");
    expect(await hedging.stub.hedgeCall({ ...backupOf(other), attempt: other.attempt + 1 })).toEqual({ granted: false, reason: "not_running" });
    expect(await hedging.stub.hedgeCall({ ...backupOf(other), taskId: "t999" })).toEqual({ granted: false, reason: "not_running" });
  });

  it("before the tail, backs up only a straggler that has run as long as the waiting tasks will take to go out", async () => {
    // 30 tasks, W = 10, max_extra 0.5: 15 backups. Ten calls of 200 ms to 2 s finish first.
    const { stub } = await startedSwarm(30, { concurrency: 10, hedge: { after: 50, max_extra: 0.5 } });
    await finishWithLatencies(stub, 10, 200);
    const [slow, fresh] = (await stub.pull(pullOf(10))).granted;
    if (slow === undefined || fresh === undefined) throw new Error("no grants");
    // 10 tasks still wait: they go out over 10 × 1.1 s mean / W 10 = 1.1 s (a loaded machine's
    // pause between these requests stays well inside it).
    await stub.startCalls([startOf(slow, 5_000), startOf(fresh, 0)]);
    await freshThreshold(stub);
    expect(await stub.hedgeCall(backupOf(fresh))).toEqual({ granted: false, reason: "kept_for_tail" });
    expect(await stub.hedgeCall(backupOf(slow))).toEqual({ granted: true });
  });

  it("keeps the limit for the tail, spends it there, never more than max_extra × tasks", async () => {
    // 20 tasks, max_extra 0.25: 5 backups. A fixed delay (100 ms) needs no sample.
    const { stub } = await startedSwarm(20, { concurrency: 10, hedge: { after: 100, max_extra: 0.25 } });
    const granted = (await stub.pull(pullOf(10))).granted;
    // Tasks still wait and no call has finished (how soon they go out is unknown): kept for the tail.
    await stub.startCalls(granted.map((task) => startOf(task, 5_000)));
    await freshThreshold(stub);
    expect(await stub.hedgeCall(backupOf(granted[0] as ClaimedTask))).toEqual({ granted: false, reason: "kept_for_tail" });
    // The other 10 tasks are handed out: the tail. Five backups go, the sixth is over the limit.
    const rest = (
      await stub.pull(
        pullOf(
          10,
          granted.map((task) => succeeded(task, [call(5_000)])),
        ),
      )
    ).granted;
    expect(rest).toHaveLength(10);
    const answers = [];
    for (const task of rest.slice(0, 6)) answers.push(await stub.hedgeCall(backupOf(task)));
    expect(answers).toEqual([...Array(5).fill({ granted: true }), { granted: false, reason: "limit" }]);
    const status = await stub.getStatus("tk_test");
    expect(status?.hedges).toMatchObject({ sent: 5, won: 0, limit: 5, cost_usd: 0 });
    // A pull no longer offers backups once the limit is spent.
    expect((await stub.pull(pullOf(0))).hedgeAfterMs).toBeUndefined();
  });

  it("counts a lane's standby tasks as not yet out: no tail while lanes hold them", async () => {
    // 20 tasks, W = 10, max_extra 0.25: 5 backups, a fixed delay of 100 ms.
    const { stub } = await startedSwarm(20, { concurrency: 10, hedge: { after: 100, max_extra: 0.25 } });
    // Calls of uneven latency: the lanes' share and the window's room decide, not the last-window rule.
    await seedUnevenCalls(stub);
    // One lane takes the window and the other 10 as standby: nothing is left to hand out.
    const granted = (await stub.pull({ ...pullOf(10), lane: "lane-a", seq: 1, standby: 10, running: 10 })).granted;
    expect(granted.filter((task) => task.standby === true)).toHaveLength(10);
    const running = granted.filter((task) => task.standby !== true);
    await stub.startCalls(running.map((task) => startOf(task, 5_000)));
    await freshThreshold(stub);
    // The standby tasks go out after these calls: not the tail yet, so the limit is kept for it.
    expect(await stub.hedgeCall(backupOf(running[0] as ClaimedTask))).toEqual({ granted: false, reason: "kept_for_tail" });
  });

  it("reserves the backup's worst case against the budget, and refuses one the budget cannot cover", async () => {
    // mock-1 costs $0.15 / $0.60 per million tokens (the default price table); a budget this small
    // covers the tasks' own reservations and not much more.
    const { stub } = await startedSwarm(2, { concurrency: 2, max_output_tokens: 16, hedge: { after: 100, max_extra: 0.5 } }, { max_usd: 0.0001 });
    const granted = (await stub.pull(pullOf(2))).granted;
    const before = (await stub.getStatus("tk_test"))?.budget;
    const big = { ...backupOf(granted[0] as ClaimedTask), promptTokens: 1_000_000 };
    expect(await stub.hedgeCall(big)).toEqual({ granted: false, reason: "budget" });
    expect(await stub.hedgeCall(backupOf(granted[0] as ClaimedTask))).toEqual({ granted: true });
    const after = (await stub.getStatus("tk_test"))?.budget;
    expect(after?.reserved_tokens).toBe((before?.reserved_tokens ?? 0) + 26);
  });
});

describe("a hedged turn's calls on the bill", () => {
  it("bills the kept backup as a row marked won, the aborted first call at its estimate, and sends both to D1", async () => {
    const { stub } = await startedSwarm(1, { concurrency: 1, hedge: { after: 100, max_extra: 1 / 2 } });
    // max_extra 0.5 of 1 task rounds down to none: this swarm sends no backup.
    const [only] = (await stub.pull(pullOf(1))).granted;
    expect(await stub.hedgeCall(backupOf(only as ClaimedTask))).toEqual({ granted: false, reason: "limit" });

    const two = await startedSwarm(2, { concurrency: 2, hedge: { after: 100, max_extra: 0.5 } });
    const [task, other] = (await two.stub.pull(pullOf(2))).granted;
    if (task === undefined || other === undefined) throw new Error("no grants");
    // The first call is noted as a lane notes it, then runs past the delay; its backup is granted.
    await two.stub.startCalls([startOf(task, 500)]);
    expect(await two.stub.hedgeCall(backupOf(task))).toEqual({ granted: true });
    // The backup answered first; the first call was aborted, so the lane reports only the backup.
    await two.stub.pull(pullOf(0, [succeeded(task, [call(40, { hedge: "won" })]), succeeded(other, [call(30)])]));
    const status = await two.stub.getStatus("tk_test");
    expect(status?.state).toBe("completed");
    expect(status?.usage.calls).toBe(3);
    expect(status?.estimated_calls).toBe(1);
    expect(status?.hedges).toMatchObject({ sent: 1, won: 1, limit: 1 });
    const rows = await runInDurableObject(two.stub, (_i, state) =>
      state.storage.sql.exec<{ call_id: string; status: string; hedge: number }>("SELECT call_id, status, hedge FROM calls ORDER BY call_id").toArray(),
    );
    expect(rows).toEqual([
      { call_id: `${two.swarmId}:${task.taskId}:1:1`, status: "unknown", hedge: 0 },
      { call_id: `${two.swarmId}:${task.taskId}:1:1:h`, status: "ok", hedge: 2 },
      { call_id: `${two.swarmId}:${other.taskId}:1:1`, status: "ok", hedge: 0 },
    ]);
    // The transcript shows which answer was kept.
    const transcript = await two.stub.getTranscript("tk_test", task.taskId);
    expect(transcript?.calls.map((c) => [c.status, c.hedge, c.finish_reason])).toEqual([
      ["unknown", null, null],
      ["ok", "won", "stop"],
    ]);
    // D1: the same rows, the backup marked.
    await runInDurableObject(two.stub, async (instance) => {
      await instance.alarm();
    });
    const d1 = await env.LEDGER_DB.prepare("SELECT call_id, status, hedge FROM ledger WHERE swarm_id = ? ORDER BY call_id").bind(two.swarmId).all();
    expect(d1.results).toEqual(rows.map((row) => ({ ...row, hedge: row.hedge > 0 ? row.hedge : 0 })));
  });
});
