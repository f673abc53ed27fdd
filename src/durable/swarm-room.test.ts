// SwarmRoom, driven through its RPC surface with the real local Durable Object, queue producer
// and D1, playing the agent's lanes by hand: windowed pull dispatch, idempotent reports, retries,
// leases, tickets, billable meters, completion, ledger flush.
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { PullRequest, StartSwarmInput, TaskCounts, TaskOutcome, TaskPool, TaskReport } from "../core/swarm-contract.ts";
import { LimitsSchema } from "../core/spec-schema.ts";
import { FIRST_LANES_MAX } from "../core/lane-sizing.ts";
import { RELEASE_TOP_UP_MS, WARMUP_RELEASE_MAX_MS } from "../core/cache-warmup.ts";
import { taskReport } from "./task-report-fixture.ts";
import { seedUnevenCalls } from "./uneven-calls-fixture.ts";

const TENANT = "tk_test";
/** What the orchestrator project gives a ticket before a lane says (wrangler.toml), and the lease grace. */
const LANE_SLOTS = Number(env.LANE_SLOTS);
const LEASE_GRACE_MS = Number(env.LEASE_GRACE_S) * 1_000;
let counter = 0;

type LimitsInput = Partial<{
  concurrency: number;
  max_attempts: number;
  timeout_s: number;
  long_timeout_s: number;
  retry_budget: number;
  max_output_tokens: number;
  max_turns: number;
  stop_after_failures: number;
  cache_warmup: "auto" | false;
}>;

function newSwarm(taskCount: number, limits: LimitsInput = {}, extra: { model?: string; fallback?: string[] } = {}) {
  counter += 1;
  const swarmId = `sw_roomtest${Date.now().toString(36)}${counter}`;
  const input: StartSwarmInput = {
    swarmId,
    tenant: TENANT,
    spec: { name: `room test ${counter}`, model: extra.model ?? "mock-1", fallback: extra.fallback, limits: LimitsSchema.parse(limits) },
    tasks: Array.from({ length: taskCount }, (_, i) => ({ id: toTaskId(i + 1), prompt: `prompt ${i + 1}` })),
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  return { swarmId, input, stub };
}

type Stub = ReturnType<typeof newSwarm>["stub"];
type Pulled = Awaited<ReturnType<Stub["pull"]>>;

const toTaskId = (n: number) => `task-${String(n).padStart(3, "0")}`;

/** One lane's pull, with the defaults of a lane that has `LANE_SLOTS` slots and 10 of them free. */
function pull(stub: Stub, lane: Partial<Omit<PullRequest, "pool">> & { pool?: TaskPool } = {}): Promise<Pulled> {
  const request: PullRequest = {
    ticket: lane.ticket ?? "lane-1",
    reports: lane.reports ?? [],
    want: lane.want ?? 10,
    slots: lane.slots ?? LANE_SLOTS,
    final: lane.final ?? false,
  };
  if (lane.pool !== undefined) request.pool = lane.pool;
  if (lane.endBy !== undefined) request.endBy = lane.endBy;
  if (lane.lane !== undefined) request.lane = lane.lane;
  if (lane.seq !== undefined) request.seq = lane.seq;
  if (lane.renew !== undefined) request.renew = lane.renew;
  if (lane.started !== undefined) request.started = lane.started;
  if (lane.sentAt !== undefined) request.sentAt = lane.sentAt;
  if (lane.startedPartial !== undefined) request.startedPartial = lane.startedPartial;
  if (lane.running !== undefined) request.running = lane.running;
  if (lane.timing !== undefined) request.timing = lane.timing;
  if (lane.standby !== undefined) request.standby = lane.standby;
  if (lane.held !== undefined) request.held = lane.held;
  if (lane.released !== undefined) request.released = lane.released;
  if (lane.warmed !== undefined) request.warmed = lane.warmed;
  if (lane.firstHeadersMs !== undefined) request.firstHeadersMs = lane.firstHeadersMs;
  return stub.pull(request);
}

const grantedIds = (pulled: Pulled) => pulled.granted.map((g) => g.taskId);
const attemptsOf = (pulled: Pulled) => pulled.granted.map((g) => [g.taskId, g.attempt]);

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

/** Tasks whose retry waits are due now (instead of waiting out their back-off). */
async function makeRetriesDue(stub: Stub): Promise<void> {
  await runInDurableObject(stub, (_i, state) => {
    state.storage.sql.exec("UPDATE tasks SET retry_at = ? WHERE state = 'retry_wait'", Date.now() - 1);
  });
}

/** The leases of these running tasks (all when omitted) ran out. */
async function endLeases(stub: Stub, taskIds?: string[]): Promise<void> {
  await runInDurableObject(stub, (_i, state) => {
    const past = Date.now() - 1;
    if (taskIds === undefined) state.storage.sql.exec("UPDATE tasks SET deadline = ? WHERE state = 'running'", past);
    else for (const id of taskIds) state.storage.sql.exec("UPDATE tasks SET deadline = ? WHERE id = ? AND state = 'running'", past, id);
  });
}

/**
 * What a fresh instance would know: the room's in-memory totals, tickets and circuits are dropped
 * and read again from storage (a Durable Object evicted and started again).
 */
async function reloadCaches(stub: Stub): Promise<void> {
  await runInDurableObject(stub, (instance) => {
    const room = instance as unknown as { totals: { invalidate(): void }; tickets: { open: unknown }; circuits: { circuits: unknown } };
    room.totals.invalidate();
    room.tickets.open = null;
    room.circuits.circuits = null;
  });
}

/** Runs the alarm handler now, as the runtime would (whether or not one is scheduled). */
async function runAlarmNow(stub: Stub): Promise<void> {
  await runInDurableObject(stub, async (instance) => {
    await instance.alarm();
  });
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function billable(stub: Stub) {
  const status = await stub.getStatus(TENANT);
  if (status === null) throw new Error("no status");
  return status.billable;
}

type TicketRow = { id: string; state: string; pool: string; slots: number; expires_at: number };
async function tickets(stub: Stub): Promise<TicketRow[]> {
  return runInDurableObject(stub, (_i, state) =>
    state.storage.sql.exec<TicketRow>("SELECT id, state, pool, slots, expires_at FROM tickets ORDER BY sent_at, id").toArray(),
  );
}

async function callRows(stub: Stub): Promise<number> {
  return runInDurableObject(stub, (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM calls").one().n);
}

/** The status counts as a direct aggregate over the task rows. */
async function countsInStorage(stub: Stub): Promise<TaskCounts> {
  return runInDurableObject(stub, (_i, state) => {
    const n: Record<string, number> = {};
    for (const row of state.storage.sql.exec<{ state: string; n: number }>("SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'task' GROUP BY state")) {
      n[row.state] = row.n;
    }
    const of = (s: string) => n[s] ?? 0;
    return {
      queued: of("pending") + of("dispatched") + of("retry_wait"),
      running: of("running"),
      succeeded: of("succeeded"),
      failed: of("failed"),
      cancelled: of("cancelled"),
      skipped_budget: of("skipped_budget"),
      skipped: of("skipped"),
    };
  });
}

const usage = { prompt_tokens: 20, cached_tokens: 5, completion_tokens: 10, reasoning_tokens: 0, total_tokens: 30 };
const ok = (text: string): TaskOutcome => ({ kind: "succeeded", output: text, finishReason: "stop" });
const rateLimited: TaskOutcome = { kind: "failed", class: "rate_limited", retryable: true, retryAfterMs: 2_000, message: "429 Too Many Requests" };
const unauthorized: TaskOutcome = { kind: "failed", class: "auth", retryable: false, retryAfterMs: null, message: "401 Unauthorized" };
/** A 503 with Retry-After: transient, so it spends an attempt (a 429 does not). */
const unavailable: TaskOutcome = { kind: "failed", class: "upstream_error", retryable: true, retryAfterMs: 2_000, message: "503 Service Unavailable" };
const upstream500: TaskOutcome = { kind: "failed", class: "upstream_error", retryable: true, retryAfterMs: null, message: "500 Internal Server Error" };
/** A 429 whose Retry-After keeps it waiting well past the test. */
const rateLimitedLong: TaskOutcome = { ...rateLimited, retryAfterMs: 60_000 };
const deferred = (retryAfterMs: number): TaskOutcome => ({ kind: "deferred", retryAfterMs, reason: "no upstream key had a permit within the wait" });

function report(taskId: string, attempt: number, outcome: TaskOutcome, withUsage = true, model = "mock-1"): TaskReport {
  return taskReport(taskId, attempt, outcome, { usage: withUsage ? usage : null, model, latencyMs: 100 + attempt });
}

/** A report of every granted task with the same outcome. */
const reportAll = (pulled: Pulled, outcome: TaskOutcome, model?: string): TaskReport[] =>
  pulled.granted.map((g) => report(g.taskId, g.attempt, outcome, true, model ?? g.model));

describe("SwarmRoom windowed dispatch", () => {
  it("keeps at most W tasks in flight and grants the next one when a task finishes", async () => {
    const { input, stub } = newSwarm(10, { concurrency: 3 });
    expect(await stub.start(input)).toEqual({ created: true });
    // Nothing is handed out before a lane asks.
    expect(countStates(await taskStates(stub))).toEqual({ pending: 10 });

    const first = await pull(stub, { want: 10 });
    expect(first.granted.map((g) => [g.taskId, g.attempt, g.prompt])).toEqual([
      ["task-001", 1, "prompt 1"],
      ["task-002", 1, "prompt 2"],
      ["task-003", 1, "prompt 3"],
    ]);
    expect(first.stop).toBe(false);
    expect(countStates(await taskStates(stub))).toEqual({ running: 3, pending: 7 });

    // The window is full: another lane gets nothing, and nothing waits to retry; with nothing of
    // its own running it is told to ask again soon (100 ms, or the room's pace), not to end: the
    // swarm still needs it once the window frees.
    const second = await pull(stub, { ticket: "lane-2", want: 10 });
    expect(second.granted).toEqual([]);
    expect(second.stop).toBe(false);
    expect(second.retryInMs).toBe(100);
    // A lane that runs tasks of its own is not told when to ask: its tasks' ends bring its next pull.
    const busy = await pull(stub, { ticket: "lane-3", want: 10, running: 2 });
    expect(busy.granted).toEqual([]);
    expect(busy.retryInMs).toBeNull();

    // One outcome frees one place, which the same pull fills.
    const third = await pull(stub, { reports: [report("task-001", 1, ok("one"))], want: 10 });
    expect(third.actions).toEqual([{ taskId: "task-001", action: "ack", delaySeconds: 0 }]);
    expect(grantedIds(third)).toEqual(["task-004"]);
    expect(countStates(await taskStates(stub))).toEqual({ succeeded: 1, running: 3, pending: 6 });
  });

  it("is idempotent by swarm id", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    expect(await stub.start(input)).toEqual({ created: false });
    expect(Object.keys(await taskStates(stub))).toHaveLength(2);
  });
});

describe("SwarmRoom pull", () => {
  it("hands a task out once: a leased or finished task is never granted again", async () => {
    const { input, stub } = newSwarm(3, { concurrency: 2 });
    await stub.start(input);
    const first = await pull(stub, { want: 1 });
    expect(first.config).toMatchObject({ model: "mock-1", system: null, responseFormat: null });
    expect(grantedIds(first)).toEqual(["task-001"]);

    const again = await pull(stub, { ticket: "lane-2", want: 10 });
    // task-001 is leased; task-003 waits outside the window.
    expect(grantedIds(again)).toEqual(["task-002"]);
    expect((await pull(stub, { ticket: "lane-3", want: 10 })).granted).toEqual([]);

    const afterDone = await pull(stub, { ticket: "lane-3", reports: [report("task-001", 1, ok("done"))], want: 10 });
    expect(grantedIds(afterDone)).toEqual(["task-003"]);
    expect((await pull(stub, { ticket: "lane-4", want: 10 })).granted).toEqual([]);
  });

  it("grants a lane at most its share of the tasks left as standby: what waits, over the open lanes", async () => {
    const { input, stub } = newSwarm(40, { concurrency: 30 });
    await stub.start(input);
    // Calls of uneven latency: the lanes' share and the window's room decide, not the last-window rule.
    await seedUnevenCalls(stub);
    const sent = await tickets(stub);
    // A window of 30 opens five header-bound lanes of 6.
    expect(sent).toHaveLength(5);
    const first = await pull(stub, { ticket: sent[0]?.id ?? "", lane: "lane-a", seq: 1, want: 6, standby: 64, running: 6 });
    const standby = first.granted.filter((task) => task.standby === true);
    expect(first.granted.length - standby.length).toBe(6);
    // 40 waiting over 5 lanes: 8, not the 34 the lane asked for and the room had.
    expect(standby).toHaveLength(8);
  });

  it("grants no standby task the window has room for: a lane whose want is met leaves those to other lanes", async () => {
    // As many tasks as the window holds (a swarm that fans out once): every one can run at once.
    const fits = newSwarm(40, { concurrency: 40 });
    await fits.stub.start(fits.input);
    // Calls of uneven latency: the lanes' share and the window's room decide, not the last-window rule.
    await seedUnevenCalls(fits.stub);
    const lanes = await tickets(fits.stub);
    expect(lanes.length).toBeGreaterThanOrEqual(2);
    const ask = { seq: 1, want: 6, standby: 64, running: 6 };
    const first = await pull(fits.stub, { ...ask, ticket: lanes[0]?.id ?? "", lane: "lane-a" });
    expect(first.granted).toHaveLength(6);
    expect(first.granted.filter((task) => task.standby === true)).toEqual([]);
    // The next lane finds the other 34 waiting, not held in the first lane's standby.
    const second = await pull(fits.stub, { ...ask, want: 34, ticket: lanes[1]?.id ?? "", lane: "lane-b" });
    expect(second.granted.filter((task) => task.standby !== true)).toHaveLength(34);
    expect(countStates(await taskStates(fits.stub))).toEqual({ running: 40 });

    // Six tasks more than the window: only those six can be standby (their share would be 8).
    const past = newSwarm(36, { concurrency: 30 });
    await past.stub.start(past.input);
    // Calls of uneven latency: the lanes' share and the window's room decide, not the last-window rule.
    await seedUnevenCalls(past.stub);
    const sent = await tickets(past.stub);
    expect(sent).toHaveLength(5);
    const pulled = await pull(past.stub, { ...ask, ticket: sent[0]?.id ?? "", lane: "lane-a" });
    expect(pulled.granted.filter((task) => task.standby !== true)).toHaveLength(6);
    expect(pulled.granted.filter((task) => task.standby === true)).toHaveLength(6);
  });

  it.each([
    ["a header-bound prior: a wave of standby, from what the other lanes have no slots for", { slots: 6, latencyMs: 200, ttfbMs: 200 }, 40, 6],
    ["a header-bound prior, one window of tasks: none, since every task left has a slot in another lane", { slots: 6, latencyMs: 200, ttfbMs: 200 }, 30, 0],
    ["no prior (its headers may come early, and it then pulls again to grow): none", null, 40, 0],
  ])("grants standby on a lane's first pull once its want is met, %s", async (_label, lanePrior, taskCount, expected) => {
    // W = 30: five lanes of 6. The first to pull runs nothing yet and asks for its 6 and a wave of
    // standby: its first tasks end together, and with none in hand its slots would wait a pull for
    // their next ones. Of the 34 left of 40, the four other lanes have slots for 24: the 10 past
    // them can wait in this one.
    const { input, stub } = newSwarm(taskCount, { concurrency: 30 });
    await stub.start(lanePrior === null ? input : { ...input, lanePrior });
    // Calls of uneven latency: the lanes' share and the window's room decide, not the last-window rule.
    await seedUnevenCalls(stub);
    const sent = await tickets(stub);
    expect(sent).toHaveLength(5);
    const first = await pull(stub, { ticket: sent[0]?.id ?? "", lane: "lane-a", seq: 1, want: 6, standby: 6 });
    expect(first.granted.filter((task) => task.standby !== true)).toHaveLength(6);
    expect(first.granted.filter((task) => task.standby === true)).toHaveLength(expected);
  });

  it("grants a lane past what its gate starts at once only the tasks the other lanes have no slots for", async () => {
    // Headers at 500 ms of 3 s calls: a lane carries 36 once full, and starts 6 a time to headers.
    const lanePrior = { slots: 36, latencyMs: 3_000, ttfbMs: 500 };
    const { input, stub } = newSwarm(60, { concurrency: 60 });
    await stub.start({ ...input, lanePrior });
    const lanes = await tickets(stub);
    // One window of tasks: lanes of 6 fill it within one time to headers.
    expect(lanes.map((t) => t.slots)).toEqual(Array.from({ length: 10 }, () => 6));
    // Lane 0 asks for 36 (its first headers came): the 9 other lanes have 54 slots for 54 of the 60,
    // so it gets the 6 its gate starts now, not 36 of which 30 would wait up to five times to headers.
    const first = await pull(stub, { ticket: lanes[0]?.id ?? "", lane: "lane-0", seq: 1, want: 36 });
    expect(first.granted).toHaveLength(6);
    for (const [i, t] of lanes.slice(1).entries()) {
      const granted = await pull(stub, { ticket: t.id, lane: `lane-${i + 1}`, seq: 1, want: 6 });
      expect(granted.granted).toHaveLength(6);
    }
    expect(countStates(await taskStates(stub))).toEqual({ running: 60 });

    // More tasks than the other lanes have slots for: a lane gets all it asks for. (Four windows of
    // tasks fill the window within 1.2 s: 5 lanes of 14.)
    const more = newSwarm(240, { concurrency: 60 });
    await more.stub.start({ ...more.input, lanePrior });
    const [a] = await tickets(more.stub);
    expect(a?.slots).toBe(14);
    expect((await pull(more.stub, { ticket: a?.id ?? "", lane: "lane-a", seq: 1, want: 14 })).granted).toHaveLength(14);
  });

  it("grants standby while the window has room that no other lane has slots for", async () => {
    // W = 12: two header-bound lanes of 6. Lane b runs its 6 and says so.
    const { input, stub } = newSwarm(13, { concurrency: 12 });
    await stub.start(input);
    // Calls of uneven latency: the lanes' share and the window's room decide, not the last-window rule.
    await seedUnevenCalls(stub);
    const [a, b] = await tickets(stub);
    expect((await pull(stub, { ticket: b?.id ?? "", lane: "lane-b", seq: 1, want: 6 })).granted).toHaveLength(6);
    await pull(stub, { ticket: b?.id ?? "", lane: "lane-b", seq: 2, want: 0, running: 6 });
    // Lane a runs 3 of its 6 and asks for 3: the window keeps room for 3 more, which lane b, full,
    // cannot take. The 4 left go to it as standby (its share: 7 waiting over 2 lanes), not 4 − 3.
    const pulled = await pull(stub, { ticket: a?.id ?? "", lane: "lane-a", seq: 1, want: 3, standby: 64, running: 3 });
    expect(pulled.granted.filter((task) => task.standby !== true)).toHaveLength(3);
    expect(pulled.granted.filter((task) => task.standby === true)).toHaveLength(4);
  });

  it("counts the standby tasks other lanes hold in a lane's share: lanes that pull in turn get about the same", async () => {
    const { input, stub } = newSwarm(70, { concurrency: 30 });
    await stub.start(input);
    // Calls of uneven latency: the lanes' share and the window's room decide, not the last-window rule.
    await seedUnevenCalls(stub);
    const sent = await tickets(stub);
    expect(sent).toHaveLength(5);
    const ask = { seq: 1, want: 6, standby: 64, running: 6 };
    const held: { taskId: string; attempt: number }[][] = [];
    for (const [i, ticket] of sent.slice(0, 3).entries()) {
      const pulled = await pull(stub, { ...ask, ticket: ticket.id, lane: `lane-${i}` });
      expect(pulled.granted.filter((task) => task.standby !== true)).toHaveLength(6);
      held.push(pulled.granted.filter((task) => task.standby === true).map((task) => ({ taskId: task.taskId, attempt: task.attempt })));
    }
    // Not started: 70, then 70 − 6 = 64, then 64 − 6 = 58, over 5 lanes. Over what waits alone
    // (70, 50, 34) the later lanes would get 14, 10 and 7.
    expect(held.map((tasks) => tasks.length)).toEqual([14, 13, 12]);
    // The first lane asks again holding its 14: not started, 13 wait and 39 are held, over 5
    // lanes 11 each, fewer than it holds. Over what waits alone it would get 3 more.
    const again = await pull(stub, { ticket: sent[0]?.id ?? "", lane: "lane-0", seq: 2, want: 0, standby: 64, running: 12, held: held[0] ?? [] });
    expect(again.granted).toEqual([]);
  });

  it("grants a lane at most three times what it will run as standby, whatever it asked for", async () => {
    const { input, stub } = newSwarm(200, { concurrency: 30 });
    await stub.start(input);
    const sent = await tickets(stub);
    expect((await pull(stub, { ticket: sent[0]?.id ?? "", lane: "lane-a", seq: 1, want: 30 })).granted).toHaveLength(30);
    // The window is full: a lane of 128 slots running 6 asks for 122 more and 64 standby.
    const thin = await pull(stub, { ticket: sent[1]?.id ?? "", lane: "lane-b", seq: 1, want: 122, standby: 64, running: 6 });
    expect(thin.granted.filter((task) => task.standby !== true)).toEqual([]);
    expect(thin.granted.filter((task) => task.standby === true)).toHaveLength(18);
  });

  it.each([
    ["even calls (all 200 ms): the last window stays in the room, for the lanes whose slots free first", [200], 0],
    ["uneven calls (one in five 1.5 s, the rest 300 ms): its share goes out as standby", [300, 300, 300, 300, 1_500], 10],
  ])("near a swarm's end, with %s", async (_label, latencies, expectedStandby) => {
    const { input, stub } = newSwarm(80, { concurrency: 30 });
    await stub.start(input);
    const sent = await tickets(stub);
    expect(sent).toHaveLength(5);
    const lane = { ticket: sent[0]?.id ?? "", lane: "lane-a" };
    const first = await pull(stub, { ...lane, seq: 1, want: 30 });
    expect(first.granted).toHaveLength(30);
    // 24 of the window's tasks end; their places go to 24 of the 50 waiting, and 26 are left: less
    // than a window.
    const reports = first.granted
      .slice(0, 24)
      .map((g, i) => taskReport(g.taskId, g.attempt, ok(`done ${i}`), { latencyMs: latencies[i % latencies.length] ?? 0 }));
    const second = await pull(stub, { ...lane, seq: 2, reports, want: 24, standby: 18, running: 6 });
    expect(second.granted.filter((task) => task.standby !== true)).toHaveLength(24);
    // Uneven: 50 waiting over 5 lanes, 10 (its share).
    expect(second.granted.filter((task) => task.standby === true)).toHaveLength(expectedStandby);
  });

  /** A header-bound swarm's first round: W = 100 opens 17 lanes of 6, and each takes its 6 (the last 4). */
  async function firstRound(taskCount: number) {
    const { input, stub } = newSwarm(taskCount, { concurrency: 100 });
    await stub.start(input);
    const lanes = (await tickets(stub)).map((ticket, i) => ({ ticket: ticket.id, lane: `lane-${i}` }));
    expect(lanes).toHaveLength(17);
    const round = [];
    for (const lane of lanes) round.push((await pull(stub, { ...lane, seq: 1, want: 6 })).granted);
    expect(round.flat()).toHaveLength(100);
    return { stub, lanes, round };
  }

  /** A lane reports its round's tasks ended (calls of `latencyMs`) and asks for their places and a round of standby. */
  function roundEnd(lane: { ticket: string; lane: string }, tasks: { taskId: string; attempt: number }[], latencyMs: number) {
    const reports = tasks.map((g) => taskReport(g.taskId, g.attempt, ok("done"), { latencyMs }));
    return { ...lane, seq: 2, reports, want: tasks.length, standby: 18, running: 0 };
  }

  it("two windows, no call ended before the round's end: the first lanes to report it get the rest to run, none as standby", async () => {
    // 200 calls of 1 s with headers at the answer: the lanes that reported first took the other 100
    // as standby while 11 lanes of 17 found nothing, and ran a third round (1.6× ideal).
    const { stub, lanes, round } = await firstRound(200);
    for (const [i, lane] of lanes.slice(0, 3).entries()) {
      const answer = await pull(stub, roundEnd(lane, round[i] ?? [], 1_000));
      expect(answer.granted.filter((task) => task.standby !== true)).toHaveLength(6);
      expect(answer.granted.filter((task) => task.standby === true)).toEqual([]);
    }
    // What is left goes to the other lanes' freed slots as they report: the whole second round runs at once.
    for (const [i, lane] of lanes.slice(3).entries()) await pull(stub, roundEnd(lane, round[i + 3] ?? [], 1_000));
    expect(countStates(await taskStates(stub))).toEqual({ succeeded: 100, running: 100 });
  });

  it("three windows of even calls: a lane that reports a round's end first gets one round of standby, not two", async () => {
    // 300 calls of 500 ms, headers at the answer: three lanes took 11–12 standby tasks each and ran
    // a fourth round (1.19× the pool's wall).
    const { stub, lanes, round } = await firstRound(300);
    const standby = [];
    for (const [i, lane] of lanes.slice(0, 3).entries()) {
      const answer = await pull(stub, roundEnd(lane, round[i] ?? [], 500));
      expect(answer.granted.filter((task) => task.standby !== true)).toHaveLength(6);
      standby.push(answer.granted.filter((task) => task.standby === true).length);
    }
    expect(standby).toEqual([6, 6, 6]);
  });

  it("leases for every turn of a task's agent loop (turns × (timeout_s + tool time) + grace)", async () => {
    const plain = newSwarm(1, { timeout_s: 10 });
    await plain.stub.start(plain.input);
    const before = Date.now();
    const one = (await pull(plain.stub, { want: 1 })).granted[0];
    expect(one?.timeoutS).toBe(10);
    expect(one?.runUntil).toBeGreaterThanOrEqual(before + 10_000 + LEASE_GRACE_MS);
    expect(one?.runUntil).toBeLessThan(before + 2 * 10_000 + LEASE_GRACE_MS);

    // With tools, every one of max_turns turns may run and call tools (TOOL_TURN_LEASE_S each).
    const agent = newSwarm(1, { timeout_s: 10, max_turns: 3 });
    agent.input.spec = { ...agent.input.spec, tools: ["scratchpad"] };
    await agent.stub.start(agent.input);
    const toolTurnMs = Number(env.TOOL_TURN_LEASE_S) * 1_000;
    const start = Date.now();
    const three = (await pull(agent.stub, { want: 1 })).granted[0];
    expect(three?.runUntil).toBeGreaterThanOrEqual(start + 3 * (10_000 + toolTurnMs) + LEASE_GRACE_MS);
    expect(three?.runUntil).toBeLessThan(start + 4 * (10_000 + toolTurnMs) + LEASE_GRACE_MS);
  });

  it("leaves a task to another lane when its calls could outlast the lane (endBy)", async () => {
    const { input, stub } = newSwarm(1, { timeout_s: 10 });
    await stub.start(input);
    const short = await pull(stub, { want: 1, endBy: Date.now() + 5_000 });
    expect(short).toMatchObject({ granted: [], stop: true });
    expect(countStates(await taskStates(stub))).toEqual({ pending: 1 });
    expect(grantedIds(await pull(stub, { ticket: "lane-2", want: 1, endBy: Date.now() + 60_000 }))).toEqual(["task-001"]);
  });

  it("grants no more than one RPC answer can carry; the rest stay pending for the next pull", async () => {
    const { input, stub } = newSwarm(3, { concurrency: 3 });
    const big = "x".repeat(4_500_000);
    input.tasks = input.tasks.map((task) => ({ ...task, prompt: big }));
    await stub.start(input);
    const first = await pull(stub, { want: 3 });
    expect(grantedIds(first)).toEqual(["task-001"]);
    expect(countStates(await taskStates(stub))).toEqual({ running: 1, pending: 2 });
    expect(grantedIds(await pull(stub, { want: 3 }))).toEqual(["task-002"]);
  });

  it("answers a pull for a swarm that was never started with no config and stop", async () => {
    const { stub } = newSwarm(1);
    const pulled = await pull(stub, { reports: [report("task-001", 1, ok("x"))] });
    expect(pulled).toEqual({ config: null, granted: [], actions: [{ taskId: "task-001", action: "ack", delaySeconds: 0 }], stop: true, retryInMs: null });
  });
});

describe("SwarmRoom reports", () => {
  it("records a report once, however often it is delivered", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    await pull(stub, { want: 1 });
    const r = report("task-001", 1, ok("answer"));
    expect((await pull(stub, { reports: [r], want: 0 })).actions).toEqual([{ taskId: "task-001", action: "ack", delaySeconds: 0 }]);
    expect((await pull(stub, { reports: [r], want: 0 })).actions).toEqual([{ taskId: "task-001", action: "ack", delaySeconds: 0 }]);
    expect(await callRows(stub)).toBe(1);
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ task_id: "task-001", state: "succeeded", output: "answer", attempts: 1 });
    expect(page?.results[0]?.usage).toEqual({ calls: 1, prompt_tokens: 20, cached_tokens: 5, completion_tokens: 10, total_tokens: 30 });
  });

  it("records calls ahead of their outcome (a lane that dies later loses no billed usage), once", async () => {
    const { input, stub } = newSwarm(1);
    await stub.start(input);
    await pull(stub, { want: 1 });
    const r = report("task-001", 1, ok("answer"));
    await stub.recordCalls([{ taskId: r.taskId, attempt: r.attempt, calls: r.calls }]);
    expect((await taskStates(stub))["task-001"]).toBe("running");
    expect((await stub.getStatus(TENANT))?.usage.calls).toBe(1);
    await pull(stub, { reports: [r], want: 0 });
    const status = await stub.getStatus(TENANT);
    expect(status?.usage).toMatchObject({ calls: 1, total_tokens: 30 });
    expect(status?.state).toBe("completed");
  });

  it("keeps a retryable failure waiting out its back-off, grants it again when due, and fails it after max_attempts", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 2 });
    await stub.start(input);
    await pull(stub, { want: 1 });
    const first = await pull(stub, { reports: [report("task-001", 1, unavailable)], want: 1 });
    expect(first.actions[0]).toMatchObject({ taskId: "task-001", action: "retry" });
    // Retry-After (2 s) is a floor for the delay; the same pull grants nothing before then.
    expect(first.actions[0]?.delaySeconds).toBeGreaterThanOrEqual(2);
    expect(first.granted).toEqual([]);
    expect(first.stop).toBe(false);
    expect(first.retryInMs).toBe(2_000);
    expect((await taskStates(stub))["task-001"]).toBe("retry_wait");

    await makeRetriesDue(stub);
    const second = await pull(stub, { ticket: "lane-2", want: 1 });
    expect(attemptsOf(second)).toEqual([["task-001", 2]]);
    const last = await pull(stub, { ticket: "lane-2", reports: [report("task-001", 2, unavailable)], want: 1 });
    expect(last.actions).toEqual([{ taskId: "task-001", action: "ack", delaySeconds: 0 }]);
    expect(last).toMatchObject({ granted: [], stop: true });
    const status = await stub.getStatus(TENANT);
    expect(status?.state).toBe("completed_with_failures");
    expect(status?.counts).toMatchObject({ failed: 1, succeeded: 0, queued: 0, running: 0 });
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ state: "failed", attempts: 2, error: { class: "upstream_error" } });
    expect(page?.results[0]?.usage.calls).toBe(2);
  });

  it("fails a task at once on a permanent failure", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 4 });
    await stub.start(input);
    await pull(stub, { want: 1 });
    const response = await pull(stub, { reports: [report("task-001", 1, unauthorized)], want: 1 });
    expect(response.actions[0]?.action).toBe("ack");
    expect(response.granted).toEqual([]);
    expect((await taskStates(stub))["task-001"]).toBe("failed");
  });

  it("keeps a late success from an older attempt but ignores its late failure", async () => {
    const { input, stub } = newSwarm(2, { max_attempts: 3 });
    await stub.start(input);
    for (const id of ["task-001", "task-002"]) {
      expect(grantedIds(await pull(stub, { want: 1 }))).toEqual([id]);
      await pull(stub, { reports: [report(id, 1, rateLimited)], want: 0 });
      await makeRetriesDue(stub);
      expect(attemptsOf(await pull(stub, { ticket: `lane-${id}`, want: 1 }))).toEqual([[id, 2]]); // attempt 2 now running
    }
    await pull(stub, { reports: [report("task-001", 1, ok("late but good")), report("task-002", 1, unauthorized)], want: 0 });
    expect(await taskStates(stub)).toEqual({ "task-001": "succeeded", "task-002": "running" });
    // Attempt 2's report of task-001 changes nothing now.
    await pull(stub, { ticket: "lane-task-001", reports: [report("task-001", 2, unauthorized)], want: 0 });
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ state: "succeeded", output: "late but good" });
  });
});

describe("SwarmRoom agent checkpoints", () => {
  const checkpoint = (turns: number) => ({
    step: 1 + 2 * turns,
    turns,
    toolCalls: turns,
    repairs: 0,
    messages_json: JSON.stringify([{ role: "user", content: `after ${turns}` }]),
  });
  const turnCall = (turn: number) => ({ turn, model: "mock-1", usage, latencyMs: 10, status: "ok" as const, errorClass: null, startedAt: Date.now() });

  it("a retried attempt hands its checkpoint to the next grant; an older one never overwrites a newer one", async () => {
    const { input, stub } = newSwarm(1);
    await stub.start(input);
    const first = await pull(stub, { want: 1 });
    expect(first.granted[0]?.checkpoint).toBeNull();
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [turnCall(1), turnCall(2)], checkpoint: checkpoint(2) }]);
    // A late flush of an older checkpoint of the same attempt changes nothing.
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [], checkpoint: checkpoint(1) }]);
    await pull(stub, {
      reports: [
        {
          taskId: "task-001",
          attempt: 1,
          outcome: rateLimited,
          calls: [{ ...turnCall(3), status: "error", errorClass: "rate_limited", usage: null }],
          checkpoint: checkpoint(2),
        },
      ],
      want: 0,
    });
    await makeRetriesDue(stub);
    const second = await pull(stub, { ticket: "lane-2", want: 1 });
    expect(second.granted[0]).toMatchObject({ attempt: 2, checkpoint: checkpoint(2) });
    // A checkpoint from the superseded attempt 1 is refused.
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [], checkpoint: checkpoint(5) }]);
    await pull(stub, {
      ticket: "lane-2",
      reports: [{ taskId: "task-001", attempt: 2, outcome: ok("done"), calls: [turnCall(3), turnCall(4)], toolCalls: 3 }],
      want: 0,
    });
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ state: "succeeded", attempts: 2, tool_calls: 3, usage: { calls: 5 } });
  });

  it("the status's tool_calls follows each task's count as it rises, read between the rises", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    await pull(stub, { want: 2 });
    const toolCalls = async () => (await stub.getStatus(TENANT))?.tool_calls;
    expect(await toolCalls()).toBe(0);
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [turnCall(1), turnCall(2)], checkpoint: checkpoint(2) }]);
    expect(await toolCalls()).toBe(2);
    // An older checkpoint lowers nothing.
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [], checkpoint: checkpoint(1) }]);
    expect(await toolCalls()).toBe(2);
    await pull(stub, { reports: [{ taskId: "task-002", attempt: 1, outcome: ok("done"), calls: [turnCall(1)], toolCalls: 3 }], want: 0 });
    expect(await toolCalls()).toBe(5);
    // A report that counts fewer than its checkpoint did keeps the higher count.
    await pull(stub, { reports: [{ taskId: "task-001", attempt: 1, outcome: ok("done"), calls: [turnCall(3)], toolCalls: 1 }], want: 0 });
    expect(await toolCalls()).toBe(5);
    // Read again by a room that starts afresh (the sum is not kept in storage).
    await evictDurableObject(stub);
    expect(await toolCalls()).toBe(5);
  });

  it("a checkpoint too large to keep still raises its attempt's tool calls, and a superseded attempt's raises nothing", async () => {
    const { input, stub } = newSwarm(1);
    await stub.start(input);
    await pull(stub, { want: 1 });
    const huge = (turns: number) => ({ ...checkpoint(turns), messages_json: JSON.stringify([{ role: "user", content: "x".repeat(1_100_000) }]) });
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [], checkpoint: checkpoint(1) }]);
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: [], checkpoint: huge(3) }]);
    expect((await stub.getStatus(TENANT))?.tool_calls).toBe(3);
    // The task keeps its last checkpoint that fitted.
    const kept = await runInDurableObject(stub, (_i, state) => state.storage.sql.exec<{ checkpoint: string }>("SELECT checkpoint FROM tasks").one().checkpoint);
    expect(JSON.parse(kept)).toMatchObject({ turns: 1 });
    await stub.recordCalls([{ taskId: "task-001", attempt: 2, calls: [], checkpoint: huge(7) }]);
    expect((await stub.getStatus(TENANT))?.tool_calls).toBe(3);
  });

  it("a deferral after some turns keeps its attempt's number (its call ids are taken) and hands its checkpoint on", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    await pull(stub, { want: 2 });
    const deferral = await pull(stub, {
      reports: [
        { taskId: "task-001", attempt: 1, outcome: deferred(0), calls: [turnCall(1), turnCall(2)], checkpoint: checkpoint(2) },
        { taskId: "task-002", attempt: 1, outcome: deferred(0), calls: [] },
      ],
      want: 0,
    });
    expect(deferral.actions.map((a) => [a.taskId, a.action])).toEqual([
      ["task-001", "retry"],
      ["task-002", "retry"],
    ]);
    const again = await pull(stub, { ticket: "lane-2", want: 2 });
    expect(again.granted.map((g) => [g.taskId, g.attempt, g.checkpoint?.turns ?? null])).toEqual([
      ["task-001", 2, 2],
      // Under a new number too, so no late report of the deferred attempt can pass for this one's.
      ["task-002", 2, null],
    ]);
  });

  it("a deferral before any call does not use up an attempt", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 1 });
    await stub.start(input);
    for (let i = 1; i <= 3; i += 1) {
      const granted = await pull(stub, { ticket: `lane-${i}`, want: 1 });
      expect(attemptsOf(granted)).toEqual([["task-001", i]]);
      await pull(stub, { ticket: `lane-${i}`, reports: [{ taskId: "task-001", attempt: i, outcome: deferred(0), calls: [] }], want: 0, final: true });
    }
    // Its one real attempt: a retryable failure is not retried (max_attempts 1).
    const real = await pull(stub, { ticket: "lane-4", want: 1 });
    expect(attemptsOf(real)).toEqual([["task-001", 4]]);
    await pull(stub, { ticket: "lane-4", reports: [report("task-001", 4, unavailable)], want: 0 });
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ state: "failed", error: { class: "upstream_error" }, usage: { calls: 1 } });
  });

  it("a 429 is back-pressure, not failure: it never spends an attempt while the retry budget lasts, and the window shrinks", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 1, retry_budget: 3, concurrency: 8 });
    await stub.start(input);
    for (let i = 1; i <= 3; i += 1) {
      expect(attemptsOf(await pull(stub, { ticket: `lane-${i}`, want: 1 }))).toEqual([["task-001", i]]);
      const answer = await pull(stub, { ticket: `lane-${i}`, reports: [report("task-001", i, rateLimited)], want: 0 });
      expect(answer.actions[0]).toMatchObject({ action: "retry" });
      // Retry-After (2 s) is the floor of its wait.
      expect(answer.actions[0]?.delaySeconds).toBeGreaterThanOrEqual(2);
      await makeRetriesDue(stub);
    }
    const status = await stub.getStatus(TENANT);
    expect(status?.retries).toEqual({ used: 3, budget: 3 });
    expect(status?.window).toBeLessThan(8);
    // The budget is spent: the next 429 ends the task, with the reason in its error.
    await pull(stub, { ticket: "lane-4", want: 1 });
    await pull(stub, { ticket: "lane-4", reports: [report("task-001", 4, rateLimited)], want: 0 });
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ state: "failed", attempts: 4, error: { class: "rate_limited" }, usage: { calls: 4 } });
    expect(page?.results[0]?.error?.message).toContain("retry budget of 3 is spent");
  });

  it("a 429 then a success: the task succeeds on the attempt after, its one real attempt unspent", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 1 });
    await stub.start(input);
    await pull(stub, { want: 1 });
    await pull(stub, { reports: [report("task-001", 1, rateLimited)], want: 0 });
    await makeRetriesDue(stub);
    expect(attemptsOf(await pull(stub, { ticket: "lane-2", want: 1 }))).toEqual([["task-001", 2]]);
    await pull(stub, { ticket: "lane-2", reports: [report("task-001", 2, ok("done"))], want: 0 });
    expect(await taskStates(stub)).toEqual({ "task-001": "succeeded" });
  });
});

describe("SwarmRoom leases and heartbeats", () => {
  it("leases a task for LEASE_S, renews it on its lane's heartbeat up to its run bound, and leaves another attempt's lease alone", async () => {
    const { input, stub } = newSwarm(1, { timeout_s: 60 });
    await stub.start(input);
    const before = Date.now();
    const first = await pull(stub, { want: 1 });
    const [task] = first.granted;
    if (task === undefined) throw new Error("nothing granted");
    expect(first.leaseMs).toBe(Number(env.LEASE_S) * 1_000);
    // Short, and well inside the run bound (60 s + grace).
    expect(task.leaseUntil - before).toBeLessThanOrEqual(Number(env.LEASE_S) * 1_000 + 1_000);
    expect(task.runUntil).toBeGreaterThan(task.leaseUntil);

    const beat = await pull(stub, { want: 0, renew: [{ taskId: "task-001", attempt: 1 }] });
    expect(beat.renewed).toHaveLength(1);
    expect(beat.renewed?.[0]?.leaseUntil).toBeGreaterThanOrEqual(task.leaseUntil);
    // A heartbeat for an attempt that is not the task's renews nothing.
    expect((await pull(stub, { want: 0, renew: [{ taskId: "task-001", attempt: 7 }] })).renewed).toEqual([]);
    // A lapsed lease that nobody took over is renewed: the lane is alive after all.
    await endLeases(stub);
    const late = await pull(stub, { want: 0, renew: [{ taskId: "task-001", attempt: 1 }] });
    expect(late.renewed?.[0]?.leaseUntil).toBeGreaterThan(Date.now());
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await taskStates(stub)).toEqual({ "task-001": "running" });
  });

  it("never renews a lease past the task's run bound", async () => {
    const { input, stub } = newSwarm(1, { timeout_s: 1 });
    await stub.start(input);
    const [task] = (await pull(stub, { want: 1 })).granted;
    if (task === undefined) throw new Error("nothing granted");
    const beat = await pull(stub, { want: 0, renew: [{ taskId: "task-001", attempt: 1 }] });
    expect(beat.renewed?.[0]?.leaseUntil).toBeLessThanOrEqual(task.runUntil);
  });
});

describe("SwarmRoom alarm", () => {
  it("hands a task whose lease expired out again, and fails it when no attempt is left", async () => {
    const { input, stub } = newSwarm(2, { max_attempts: 2 });
    await stub.start(input);
    await pull(stub, { want: 2 });
    // Both leases run out; task-002 is on its last attempt.
    await endLeases(stub);
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec("UPDATE tasks SET attempts = 2 WHERE id = 'task-002'");
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await taskStates(stub)).toEqual({ "task-001": "retry_wait", "task-002": "failed" });
    const again = await pull(stub, { ticket: "lane-2", want: 2 });
    expect(attemptsOf(again)).toEqual([["task-001", 2]]);
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[1]?.error?.class).toBe("lease_expired");
  });

  it("finds lapsed leases among the running tasks, with no index of its own on the lease's end (schema v11)", async () => {
    const { input, stub } = newSwarm(30, { concurrency: 10 });
    await stub.start(input);
    await pull(stub, { want: 10 });
    // Every running task holds a lease; no other task does.
    const { indexes, leased } = await runInDurableObject(stub, (_i, state) => ({
      indexes: state.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tasks' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .toArray()
        .map((row) => row.name),
      leased: state.storage.sql
        .exec<{ state: string; n: number }>("SELECT state, COUNT(*) AS n FROM tasks WHERE deadline IS NOT NULL GROUP BY state")
        .toArray(),
    }));
    expect(indexes).toEqual(["tasks_by_engine_kind", "tasks_by_state"]);
    expect(leased).toEqual([{ state: "running", n: 10 }]);
    await endLeases(stub, ["task-003", "task-007"]);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const states = await taskStates(stub);
    expect(
      Object.entries(states)
        .filter(([, s]) => s === "retry_wait")
        .map(([id]) => id),
    ).toEqual(["task-003", "task-007"]);
    expect(Object.values(states).filter((s) => s === "running")).toHaveLength(8);
  });

  it("flushes ledger rows and the swarm index to D1, exactly once however often it runs", async () => {
    const { swarmId, input, stub } = newSwarm(3);
    await stub.start(input);
    await pull(stub, { want: 3 });
    await pull(stub, {
      reports: [report("task-001", 1, ok("a")), report("task-002", 1, ok("b"), false), report("task-003", 1, unauthorized)],
      want: 0,
      final: true,
    });
    await runAlarmNow(stub);
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
    const written = (await billable(stub)).d1_rows_written;
    await runInDurableObject(stub, (_i, state) => state.storage.sql.exec("UPDATE ledger_sync SET flushed_rowid = 0"));
    await runAlarmNow(stub);
    const count = await env.LEDGER_DB.prepare("SELECT COUNT(*) AS n FROM ledger WHERE swarm_id = ?").bind(swarmId).first<{ n: number }>();
    expect(count?.n).toBe(3);
    expect((await billable(stub)).d1_rows_written).toBe(written);

    const index = await env.LEDGER_DB.prepare("SELECT state, succeeded, failed, calls, total_tokens FROM swarms WHERE id = ?").bind(swarmId).first();
    expect(index).toEqual({ state: "completed_with_failures", succeeded: 2, failed: 1, calls: 3, total_tokens: 60 });
  });
});

describe("SwarmRoom reading", () => {
  it("hides a swarm from other tenants and pages results in task order", async () => {
    const { input, stub } = newSwarm(5, { concurrency: 5 });
    await stub.start(input);
    expect(await stub.getStatus("tk_other")).toBeNull();
    expect(await stub.getResults("tk_other", null, 10)).toBeNull();
    expect(await stub.cancel("tk_other")).toBeNull();

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
    await pull(stub, { want: 3 });
    const last = await pull(stub, { reports: [report("task-003", 1, ok("c")), report("task-001", 1, ok("a")), report("task-002", 1, ok("b"))], want: 3 });
    expect(last).toMatchObject({ granted: [], stop: true, retryInMs: null });
    const status = await stub.getStatus(TENANT);
    expect(status).toMatchObject({
      state: "completed",
      tasks: 3,
      counts: { queued: 0, running: 0, succeeded: 3, failed: 0, cancelled: 0, skipped_budget: 0, skipped: 0 },
      usage: { calls: 3, prompt_tokens: 60, cached_tokens: 15, completion_tokens: 30, total_tokens: 90 },
      latency_ms: { p50: 101, p95: 101 },
      output: {
        results: [
          { task_id: "task-001", output: "a" },
          { task_id: "task-002", output: "b" },
          { task_id: "task-003", output: "c" },
        ],
        truncated: false,
      },
    });
    expect(status?.finished_at).not.toBeNull();
  });

  it("makes a finished swarm's output once: later status reads do not read every task's output again", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 2 });
    await stub.start(input);
    await pull(stub, { want: 2 });
    await pull(stub, { reports: [report("task-001", 1, ok("a")), report("task-002", 1, ok("b"))], want: 2 });
    const first = await stub.getStatus(TENANT);
    expect(first?.output).toMatchObject({
      results: [
        { task_id: "task-001", output: "a" },
        { task_id: "task-002", output: "b" },
      ],
      truncated: false,
    });
    // Nothing changes a finished swarm's outputs; were the row rewritten, the status would not see it.
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec("UPDATE tasks SET output = 'rewritten' WHERE id = 'task-001'");
    });
    expect((await stub.getStatus(TENANT))?.output).toEqual(first?.output);
  });

  it("tags an ended swarm's status over all but its meters: a read with the tag is not_modified until a late call moves the usage", async () => {
    const { input, stub } = newSwarm(1);
    await stub.start(input);
    const running = await stub.readStatus(TENANT, "*");
    expect(running).toMatchObject({ kind: "status", etag: null });
    await pull(stub, { want: 1 });
    await pull(stub, { reports: [report("task-001", 1, ok("a"))], want: 0 });
    const ended = await stub.readStatus(TENANT, null);
    if (ended?.kind !== "status" || ended.etag === null) throw new Error("an ended swarm's status must carry a tag");
    // Each read counts among the meters; the tag does not move with them.
    expect(await stub.readStatus(TENANT, ended.etag)).toEqual({ kind: "not_modified", etag: ended.etag });
    expect(await stub.readStatus(TENANT, ended.etag)).toEqual({ kind: "not_modified", etag: ended.etag });
    // A call of the task reported after the end (a second turn's, say) is billed, and moves the tag.
    const late = report("task-001", 1, ok("a"));
    await stub.recordCalls([{ taskId: "task-001", attempt: 1, calls: late.calls.map((call) => ({ ...call, turn: 2 })) }]);
    const after = await stub.readStatus(TENANT, ended.etag);
    if (after?.kind !== "status") throw new Error("the late call must change the status");
    expect(after.status.usage.calls).toBe(2);
    expect(after.etag).not.toBe(ended.etag);
    expect(await stub.readStatus("tk_someone_else", after.etag)).toBeNull();
  });

  it("closes a dead-lettered ticket without touching a task; the alarm sends another while work is left", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 2 });
    await stub.start(input);
    const [ticket] = await tickets(stub);
    if (ticket === undefined) throw new Error("no ticket");
    await pull(stub, { ticket: ticket.id, want: 1 });
    const before = await taskStates(stub);
    await stub.recordDeadTicket(ticket.id);
    expect((await tickets(stub)).map((t) => t.id)).not.toContain(ticket.id);
    expect(await taskStates(stub)).toEqual(before);
    expect(before).toEqual({ "task-001": "running", "task-002": "pending" });
    const sent = await waitFor(
      async () => {
        await runDurableObjectAlarm(stub);
        return (await billable(stub)).queue_messages_sent;
      },
      (n) => n === 2,
    );
    expect(sent).toBe(2);
    expect((await stub.getStatus(TENANT))?.state).toBe("running");
  });
});

describe("SwarmRoom resilience", () => {
  it("routes to the fallback while the primary's circuit is open; with every circuit open a pull grants nothing and says stop", async () => {
    const { input, stub } = newSwarm(12, { concurrency: 6, max_attempts: 4 }, { model: "primary", fallback: ["backup"] });
    await stub.start(input);
    const ids = ["task-001", "task-002", "task-003", "task-004", "task-005"];
    const first = await pull(stub, { want: 5 });
    expect(first.granted.map((g) => g.model)).toEqual(["primary", "primary", "primary", "primary", "primary"]);
    // Five upstream failures in a row open the primary's circuit.
    await pull(stub, { reports: ids.map((id) => report(id, 1, upstream500, false, "primary")), want: 0 });
    let status = await stub.getStatus(TENANT);
    expect(status?.circuits).toEqual([
      { model: "primary", state: "open", failures: 5, retry_at: expect.any(String) },
      { model: "backup", state: "closed", failures: 0, retry_at: null },
    ]);

    await makeRetriesDue(stub);
    const second = await pull(stub, { want: 5 });
    expect(second.granted.map((g) => [g.taskId, g.model, g.attempt])).toEqual(ids.map((id) => [id, "backup", 2]));
    await pull(stub, { reports: ids.map((id) => report(id, 2, upstream500, false, "backup")), want: 0 });

    // Both circuits open: nothing is granted, the lane is told to stop, the tasks keep their places.
    await makeRetriesDue(stub);
    const third = await pull(stub, { ticket: "lane-2", want: 6 });
    expect(third).toMatchObject({ granted: [], stop: true });
    const states = await taskStates(stub);
    expect(countStates(states)).toEqual({ retry_wait: 5, pending: 7 });
    status = await stub.getStatus(TENANT);
    expect(status?.reason).toMatch(/every model's circuit is open \(primary, backup\)/);
    expect(status?.state).toBe("running");
  });

  it("shrinks the window on a rate-limited pull and grows it back with successes", async () => {
    const { input, stub } = newSwarm(40, { concurrency: 8 });
    await stub.start(input);
    const first = await pull(stub, { want: 8 });
    expect(first.granted).toHaveLength(8);
    const [limited, ...rest] = first.granted;
    if (limited === undefined) throw new Error("nothing granted");
    // Recorded first: the window is ⌊8 × 0.7⌋ = 5, the retrying task holds one place.
    const second = await pull(stub, { reports: [report(limited.taskId, 1, rateLimitedLong), ...rest.map((g) => report(g.taskId, 1, ok(g.taskId)))], want: 10 });
    expect(second.granted).toHaveLength(4);
    const status = await stub.getStatus(TENANT);
    expect(status?.window).toBe(5);
    expect(status?.max_window).toBe(8);
    const counts = countStates(await taskStates(stub));
    expect((counts.running ?? 0) + (counts.retry_wait ?? 0)).toBe(5);

    const third = await pull(stub, { reports: reportAll(second, ok("x")), want: 10 });
    expect((await stub.getStatus(TENANT))?.window).toBe(5); // 4 successes at W=5: not yet +1
    expect(third.granted).toHaveLength(4);
    const fourth = await pull(stub, { reports: reportAll(third, ok("x")), want: 10 });
    expect((await stub.getStatus(TENANT))?.window).toBe(6);
    expect(fourth.granted).toHaveLength(5);
  });

  it("writes the window only when it moves: successes at its limit leave the swarm row alone", async () => {
    const { input, stub } = newSwarm(12, { concurrency: 4 });
    await stub.start(input);
    // A trigger counts the writes to the window's columns (the room's own statements cannot see it).
    const windowWrites = () => runInDurableObject(stub, (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT n FROM window_writes").one().n);
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec("CREATE TABLE window_writes (n INTEGER NOT NULL)");
      state.storage.sql.exec("INSERT INTO window_writes (n) VALUES (0)");
      state.storage.sql.exec(
        "CREATE TRIGGER window_written AFTER UPDATE OF window, window_credit, window_decreased_at ON swarm BEGIN UPDATE window_writes SET n = n + 1; END",
      );
    });
    const first = await pull(stub, { want: 4 });
    const second = await pull(stub, { reports: reportAll(first, ok("x")), want: 4 });
    expect((await stub.getStatus(TENANT))?.window).toBe(4);
    expect(await windowWrites()).toBe(0);
    // A 429 moves it (⌊4 × 0.7⌋ = 2), and so do the successes that grow it back.
    const [limited, ...rest] = second.granted;
    if (limited === undefined) throw new Error("nothing granted");
    const third = await pull(stub, { reports: [report(limited.taskId, 1, rateLimitedLong), ...rest.map((g) => report(g.taskId, 1, ok(g.taskId)))], want: 4 });
    expect((await stub.getStatus(TENANT))?.window).toBe(2);
    expect(await windowWrites()).toBe(1);
    await pull(stub, { reports: reportAll(third, ok("x")), want: 4 });
    expect(await windowWrites()).toBe(2);
  });

  it("spends the swarm's retry budget, then ends retryable failures instead of retrying them", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 2, retry_budget: 1 });
    await stub.start(input);
    await pull(stub, { want: 2 });
    const response = await pull(stub, { reports: [report("task-001", 1, rateLimited), report("task-002", 1, rateLimited)], want: 0 });
    expect(response.actions.map((a) => a.action)).toEqual(["retry", "ack"]);
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[1]).toMatchObject({ state: "failed", error: { class: "rate_limited" } });
    expect(page?.results[1]?.error?.message).toMatch(/retry budget of 1 is spent/);
    expect((await stub.getStatus(TENANT))?.retries).toEqual({ used: 1, budget: 1 });
  });

  it("cancel stops dispatch, lets running tasks finish and be recorded, and ends the rest cancelled", async () => {
    const { input, stub } = newSwarm(5, { concurrency: 2 });
    await stub.start(input);
    await pull(stub, { want: 2 });
    const cancelled = await stub.cancel(TENANT);
    expect(cancelled?.changed).toBe(true);
    expect(cancelled?.status).toMatchObject({ state: "cancelled", counts: { running: 2, cancelled: 3, queued: 0 }, finished_at: null });

    // In-flight calls finish and are recorded; a retryable failure is not retried any more.
    const response = await pull(stub, { reports: [report("task-001", 1, ok("kept")), report("task-002", 1, rateLimited)], want: 2 });
    expect(response.actions.map((a) => a.action)).toEqual(["ack", "ack"]);
    expect(response).toMatchObject({ granted: [], stop: true });
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
    expect((await pull(stub, { ticket: "lane-2", want: 5 })).granted).toEqual([]);
    expect((await stub.cancel(TENANT))?.changed).toBe(false);
  });

  it("runs a long task only in the long pool, with the long timeout and a lease to match", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 2, timeout_s: 10, long_timeout_s: 300 });
    input.tasks = input.tasks.map((task, i) => (i === 1 ? { ...task, long: true } : task));
    await stub.start(input);
    // One ticket per pool: the short queue's and the long queue's lanes.
    expect((await tickets(stub)).map((t) => t.pool).sort()).toEqual(["long", "short"]);
    expect((await billable(stub)).queue_messages_sent).toBe(2);
    const short = await pull(stub, { want: 2 });
    expect(short.granted.map((g) => [g.taskId, g.timeoutS])).toEqual([["task-001", 10]]);
    const before = Date.now();
    const long = await pull(stub, { ticket: "long-lane", want: 2, pool: "long" });
    expect(long.granted.map((g) => [g.taskId, g.timeoutS])).toEqual([["task-002", 300]]);
    expect(long.granted[0]?.runUntil).toBeGreaterThanOrEqual(before + 300_000);
  });
});

describe("SwarmRoom economics", () => {
  /** Lanes pull, and report every grant as a success, until nothing more is granted. */
  async function runToEnd(stub: Stub, want: number, seen: string[] = []): Promise<void> {
    let pulled = await pull(stub, { want });
    for (let round = 0; round < 40 && pulled.granted.length > 0; round += 1) {
      seen.push(...pulled.granted.map((g) => g.model));
      pulled = await pull(stub, { reports: reportAll(pulled, ok("x")), want });
    }
  }

  it("stops a swarm at its USD budget: spend never over, the rest skipped_budget, and it says why", async () => {
    // mock-1 worst case per call: (8 prompt bytes + 16) × $0.1/MTok + 64 × $0.4/MTok = $0.000028.
    const { input, stub } = newSwarm(20, { concurrency: 10, max_output_tokens: 64 });
    input.spec = { ...input.spec, budget: { max_usd: 0.0001, fallback_at: 0.2 } };
    await stub.start(input);
    // Three worst cases fit the budget: the window has room for ten, the budget for three.
    const first = await pull(stub, { want: 10 });
    expect(first.granted).toHaveLength(3);
    await pull(stub, { reports: reportAll(first, ok("x")), want: 0 });
    await runToEnd(stub, 10);
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

  it("routes each task of a weighted mix to its model", async () => {
    const { input, stub } = newSwarm(30, { concurrency: 30 });
    input.spec = {
      ...input.spec,
      model: [
        { model: "deepseek-v3.2", weight: 2 },
        { model: "kimi-k2.5", weight: 1 },
      ],
    };
    await stub.start(input);
    const pulled = await pull(stub, { want: 30 });
    expect(pulled.granted).toHaveLength(30);
    expect(new Set(pulled.granted.map((g) => g.model))).toEqual(new Set(["deepseek-v3.2", "kimi-k2.5"]));
    const status = await stub.getStatus(TENANT);
    expect(status?.model).toBe("deepseek-v3.2:2,kimi-k2.5:1");
    expect(status?.models).toEqual([
      { model: "deepseek-v3.2", weight: 2 },
      { model: "kimi-k2.5", weight: 1 },
    ]);
  });

  describe("tenant monthly budget", () => {
    // The orchestrator project caps tenant tn_0000000000c0ffee at $0.0001 a month (vitest.config.ts).
    const CAPPED = "tn_0000000000c0ffee";

    it("reserves a swarm's worst case against its tenant's month, runs under the grant, and settles the real spend", async () => {
      const first = newSwarm(20, { concurrency: 10, max_output_tokens: 64, max_attempts: 1 });
      first.input.tenant = CAPPED;
      expect(await first.stub.start(first.input)).toEqual({ created: true });
      const status = await first.stub.getStatus(CAPPED);
      // 20 tasks × $0.000028 worst case is more than the month's $0.0001: the grant caps the swarm.
      expect(status?.budget?.max_usd).toBeCloseTo(0.0001, 12);

      await runToEnd(first.stub, 10);
      const end = await first.stub.getStatus(CAPPED);
      expect(end?.state).toBe("completed_with_failures");
      expect(end?.counts.skipped_budget).toBeGreaterThan(0);
      expect(end?.cost_usd).toBeLessThanOrEqual(0.0001);
      // The alarm settles the tenant's month.
      const month = env.TENANT_BUDGET.get(env.TENANT_BUDGET.idFromName(`${CAPPED}:${new Date(first.input.createdAt).toISOString().slice(0, 7)}`));
      const settled = await waitFor(
        async () => {
          await runDurableObjectAlarm(first.stub);
          return month.status();
        },
        (s) => Math.abs(s.committedUsd - (end?.cost_usd ?? -1)) < 1e-12,
      );
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

  describe("budget fallback tier", () => {
    // The orchestrator project's GATEWAY_CONFIG has "mock-economy" in tier "economy" (vitest.config.ts).
    it("routes tasks to the cheapest model of the fallback tier once the spend passes the threshold", async () => {
      const { input, stub } = newSwarm(30, { concurrency: 3, max_output_tokens: 64 });
      input.spec = { ...input.spec, budget: { max_usd: 0.0001, fallback_tier: "economy", fallback_at: 0.5 } };
      expect(await stub.start(input)).toEqual({ created: true });
      const models: string[] = [];
      await runToEnd(stub, 3, models);
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
      expect(result).toMatchObject({
        created: false,
        refused: [{ path: "budget.fallback_tier", message: expect.stringContaining("tiers: premium, economy") }],
      });
    });
  });
});

// ── Continuous pull dispatch: what lanes may do to the room, and what it must still guarantee ──

describe("SwarmRoom pull: duplicate tickets and repeated pulls", () => {
  it("two lanes under the same ticket never get the same task while it is leased", async () => {
    const { input, stub } = newSwarm(4, { concurrency: 4 });
    await stub.start(input);
    const a = await pull(stub, { ticket: "dup", want: 3 });
    const b = await pull(stub, { ticket: "dup", want: 3 });
    expect(grantedIds(a)).toEqual(["task-001", "task-002", "task-003"]);
    expect(grantedIds(b)).toEqual(["task-004"]);
    expect((await pull(stub, { ticket: "dup", want: 3 })).granted).toEqual([]);
    // A redelivered ticket counts once as a delivery.
    expect((await billable(stub)).queue_messages_received).toBe(1);
  });

  it("a pull sent again under its lane and number gets its lost answer's tasks again, not new ones; another lane never gets them", async () => {
    const { input, stub } = newSwarm(6, { concurrency: 6 });
    await stub.start(input);
    const first = await pull(stub, { ticket: "t", lane: "lane-a", seq: 1, want: 2 });
    expect(grantedIds(first)).toEqual(["task-001", "task-002"]);
    // The answer was lost: the lane sends the pull again, with the same number.
    const again = await pull(stub, { ticket: "t", lane: "lane-a", seq: 1, want: 2 });
    expect(again.granted).toEqual(first.granted);
    // A second lane under the same ticket (a duplicate delivery) with the same number is another lane.
    const other = await pull(stub, { ticket: "t", lane: "lane-b", seq: 1, want: 2 });
    expect(grantedIds(other)).toEqual(["task-003", "task-004"]);
    // The next pull moves the number on and gets new tasks; a repeat of a finished task is not given again.
    const next = await pull(stub, { ticket: "t", lane: "lane-a", seq: 2, reports: reportAll(first, ok("x")), want: 2 });
    expect(grantedIds(next)).toEqual(["task-005", "task-006"]);
    const repeat = await pull(stub, { ticket: "t", lane: "lane-a", seq: 2, reports: reportAll(first, ok("x")), want: 2 });
    expect(repeat.granted).toEqual(next.granted);
    expect(countStates(await taskStates(stub))).toEqual({ succeeded: 2, running: 4 });
  });

  it("the same pull delivered twice records its reports once, one ledger row per call id, and grants only free tasks", async () => {
    const { swarmId, input, stub } = newSwarm(6, { concurrency: 4 });
    await stub.start(input);
    const granted = await pull(stub, { ticket: "lane-a", want: 3 });
    const request = { ticket: "lane-a", reports: reportAll(granted, ok("x")), want: 2 };
    const first = await pull(stub, request);
    // The answer was lost and the lane asks again with the same reports.
    const second = await pull(stub, request);
    expect(second.actions).toEqual(first.actions);
    expect(grantedIds(first)).toEqual(["task-004", "task-005"]);
    // The repeat cannot know its first answer was lost: it gets what is free, never a leased task.
    expect(grantedIds(second)).toEqual(["task-006"]);
    expect(await callRows(stub)).toBe(3);
    expect((await stub.getStatus(TENANT))?.counts).toMatchObject({ succeeded: 3, running: 3, queued: 0 });
    await runAlarmNow(stub);
    const ledger = await env.LEDGER_DB.prepare("SELECT call_id, COUNT(*) AS n FROM ledger WHERE swarm_id = ? GROUP BY call_id ORDER BY call_id")
      .bind(swarmId)
      .all();
    expect(ledger.results).toEqual(["task-001", "task-002", "task-003"].map((id) => ({ call_id: `${swarmId}:${id}:1:1`, n: 1 })));
  });

  it("the same reports pulled again change nothing and get the same answers", async () => {
    const { input, stub } = newSwarm(5, { concurrency: 5, max_attempts: 3 });
    await stub.start(input);
    await pull(stub, { want: 5 });
    const reports: TaskReport[] = [
      report("task-001", 1, ok("one")),
      report("task-002", 1, unauthorized),
      report("task-003", 1, rateLimitedLong),
      // Deferred after a call, and before any call.
      { ...report("task-004", 1, deferred(5_000)), calls: report("task-004", 1, ok("-")).calls },
      { taskId: "task-005", attempt: 1, outcome: deferred(5_000), calls: [] },
    ];
    const snapshot = () =>
      runInDurableObject(stub, (_i, state) => ({
        tasks: state.storage.sql.exec("SELECT id, state, attempts, retry_at, error_class, output, reserved_usd FROM tasks ORDER BY seq").toArray(),
        calls: state.storage.sql.exec("SELECT call_id FROM calls ORDER BY call_id").toArray(),
        swarm: state.storage.sql.exec("SELECT window, window_credit, retries_used, state FROM swarm").toArray(),
      }));
    const first = await pull(stub, { reports, want: 0 });
    const after = await snapshot();
    const counts = (await stub.getStatus(TENANT))?.counts;
    const again = await pull(stub, { reports, want: 0 });
    expect(await snapshot()).toEqual(after);
    expect((await stub.getStatus(TENANT))?.counts).toEqual(counts);
    expect(again.actions.map((a) => [a.taskId, a.action])).toEqual(first.actions.map((a) => [a.taskId, a.action]));
    expect(first.actions.map((a) => a.action)).toEqual(["ack", "ack", "retry", "retry", "retry"]);
    again.actions.forEach((a, i) => {
      const before = first.actions[i]?.delaySeconds ?? 0;
      expect(a.delaySeconds).toBeLessThanOrEqual(before);
      expect(a.delaySeconds).toBeGreaterThanOrEqual(before - 1);
    });
  });

  it("a deferral delivered again after its task went to another lane changes nothing (no lost outcome)", async () => {
    const { swarmId, input, stub } = newSwarm(1);
    await stub.start(input);
    await pull(stub, { ticket: "lane-a", want: 1 });
    const deferral: TaskReport = { taskId: "task-001", attempt: 1, outcome: deferred(0), calls: [] };
    await pull(stub, { ticket: "lane-a", reports: [deferral], want: 0 }); // its answer is lost
    const b = await pull(stub, { ticket: "lane-b", want: 1 });
    expect(grantedIds(b)).toEqual(["task-001"]);
    const attempt = b.granted[0]?.attempt ?? 0;
    // Lane A's pull is retried with the same report while lane B runs the task.
    await pull(stub, { ticket: "lane-a", reports: [deferral], want: 0, final: true });
    expect(await taskStates(stub)).toEqual({ "task-001": "running" });
    expect((await pull(stub, { ticket: "lane-c", want: 1 })).granted).toEqual([]);
    // Lane B's outcome is kept, and its call is on the ledger under its own id.
    await pull(stub, { ticket: "lane-b", reports: [report("task-001", attempt, ok("from b"))], want: 0 });
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results[0]).toMatchObject({ state: "succeeded", output: "from b", usage: { calls: 1 } });
    const callIds = await runInDurableObject(stub, (_i, state) => state.storage.sql.exec<{ call_id: string }>("SELECT call_id FROM calls").toArray());
    expect(callIds).toEqual([{ call_id: `${swarmId}:task-001:${attempt}:1` }]);
  });

  it("a deferral delivered again after the next lane's first call never hands the task to a third lane", async () => {
    const { input, stub } = newSwarm(1);
    await stub.start(input);
    await pull(stub, { ticket: "lane-a", want: 1 });
    const deferral: TaskReport = { taskId: "task-001", attempt: 1, outcome: deferred(0), calls: [] };
    await pull(stub, { ticket: "lane-a", reports: [deferral], want: 0 });
    const b = await pull(stub, { ticket: "lane-b", want: 1 });
    const attempt = b.granted[0]?.attempt ?? 0;
    const turn1 = report("task-001", attempt, ok("-")).calls;
    await stub.recordCalls([{ taskId: "task-001", attempt, calls: turn1 }]);
    await pull(stub, { ticket: "lane-a", reports: [deferral], want: 0, final: true });
    expect((await pull(stub, { ticket: "lane-c", want: 1 })).granted).toEqual([]);
    expect(await taskStates(stub)).toEqual({ "task-001": "running" });
  });
});

describe("SwarmRoom pull: a lane that dies", () => {
  it("grants a dead lane's tasks to another lane as their next attempt once their leases end", async () => {
    const { input, stub } = newSwarm(3, { concurrency: 2, timeout_s: 1, max_attempts: 3 });
    await stub.start(input);
    const a = await pull(stub, { ticket: "lane-a", want: 2 });
    expect(attemptsOf(a)).toEqual([
      ["task-001", 1],
      ["task-002", 1],
    ]);
    // Lane A dies with both tasks. Until their leases end nobody else gets them.
    expect((await pull(stub, { ticket: "lane-b", want: 2 })).granted).toEqual([]);
    expect(a.granted[0]?.leaseUntil).toBeLessThanOrEqual(Date.now() + 1_000 + LEASE_GRACE_MS);
    await endLeases(stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await taskStates(stub)).toEqual({ "task-001": "retry_wait", "task-002": "retry_wait", "task-003": "pending" });
    const b = await pull(stub, { ticket: "lane-b", want: 2 });
    expect(attemptsOf(b)).toEqual([
      ["task-001", 2],
      ["task-002", 2],
    ]);
    // Lane A was only slow: its late success is kept, its late failure ignored; lane B's reports then change nothing.
    await pull(stub, { ticket: "lane-a", reports: [report("task-001", 1, ok("late")), report("task-002", 1, unauthorized)], want: 0, final: true });
    expect(await taskStates(stub)).toEqual({ "task-001": "succeeded", "task-002": "running", "task-003": "pending" });
    const last = await pull(stub, { ticket: "lane-b", reports: [report("task-001", 2, ok("b")), report("task-002", 2, ok("b"))], want: 2 });
    expect(attemptsOf(last)).toEqual([["task-003", 1]]);
    const page = await stub.getResults(TENANT, null, 10);
    expect(page?.results.map((r) => [r.task_id, r.state, r.output, r.usage.calls])).toEqual([
      ["task-001", "succeeded", "late", 2],
      ["task-002", "succeeded", "b", 2],
      ["task-003", "running", null, 0],
    ]);
  });
});

describe("SwarmRoom pull: cancel", () => {
  it("after cancel pulls grant nothing and say stop; running tasks still record; waiting ones end cancelled", async () => {
    const { swarmId, input, stub } = newSwarm(6, { concurrency: 4, max_attempts: 3 });
    await stub.start(input);
    await pull(stub, { want: 4 });
    await pull(stub, { reports: [report("task-004", 1, rateLimited)], want: 0 });
    expect((await taskStates(stub))["task-004"]).toBe("retry_wait");

    await stub.cancel(TENANT);
    expect(await taskStates(stub)).toMatchObject({ "task-004": "cancelled", "task-005": "cancelled", "task-006": "cancelled" });
    await makeRetriesDue(stub);
    const idle = await pull(stub, { ticket: "lane-2", want: 4 });
    expect(idle).toMatchObject({ granted: [], stop: true, retryInMs: null });

    // The lane's running tasks end: a success, a retryable failure and a deferral are all final now.
    const done = await pull(stub, {
      reports: [report("task-001", 1, ok("kept")), report("task-002", 1, rateLimited), { taskId: "task-003", attempt: 1, outcome: deferred(0), calls: [] }],
      want: 4,
    });
    expect(done).toMatchObject({ granted: [], stop: true });
    expect(done.actions.map((a) => a.action)).toEqual(["ack", "ack", "ack"]);
    expect(await taskStates(stub)).toEqual({
      "task-001": "succeeded",
      "task-002": "cancelled",
      "task-003": "cancelled",
      "task-004": "cancelled",
      "task-005": "cancelled",
      "task-006": "cancelled",
    });
    const status = await stub.getStatus(TENANT);
    expect(status).toMatchObject({ state: "cancelled", counts: { queued: 0, running: 0, succeeded: 1, cancelled: 5 }, usage: { calls: 3 } });
    expect(status?.finished_at).not.toBeNull();
    await runAlarmNow(stub);
    const ledger = await env.LEDGER_DB.prepare("SELECT COUNT(*) AS n FROM ledger WHERE swarm_id = ?").bind(swarmId).first<{ n: number }>();
    expect(ledger?.n).toBe(3);
  });

  it("a lease that ends after cancel ends its task cancelled, and the swarm with it", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 1 });
    await stub.start(input);
    await pull(stub, { want: 1 });
    await stub.cancel(TENANT);
    await endLeases(stub);
    await runAlarmNow(stub);
    expect(await taskStates(stub)).toEqual({ "task-001": "cancelled", "task-002": "cancelled" });
    expect((await stub.getStatus(TENANT))?.finished_at).not.toBeNull();
  });
});

describe("SwarmRoom tickets", () => {
  it("retires the lane that runs fewer tasks, never the one that carries the window", async () => {
    const { input, stub } = newSwarm(1_000, { concurrency: 60 });
    await stub.start(input);
    const [a, b] = await tickets(stub);
    const timing = { ttfbMs: 5, latencyMs: 200 };
    // Lane a takes 54 of the window, lane b 6; each has timed its calls and carries 128.
    await pull(stub, { ticket: a?.id ?? "", lane: "lane-a", seq: 1, want: 54, slots: 128, timing });
    await pull(stub, { ticket: b?.id ?? "", lane: "lane-b", seq: 1, want: 6, slots: 128, timing });
    // Either covers the window (60) with half of it to spare: the one that runs 54 stays ...
    const carrier = await pull(stub, { ticket: a?.id ?? "", lane: "lane-a", seq: 2, want: 0, slots: 128, timing, running: 54 });
    expect(carrier.retire).toBeUndefined();
    // ... and the one that runs 6 goes.
    const thin = await pull(stub, { ticket: b?.id ?? "", lane: "lane-b", seq: 2, want: 0, slots: 128, timing, running: 6 });
    expect(thin.retire).toBe(true);
  });

  it("retires a thin lane once the others cover the window and what it runs, not half the window again", async () => {
    const { input, stub } = newSwarm(1_000, { concurrency: 100 });
    await stub.start(input);
    const [a, b] = await tickets(stub);
    const timing = { ttfbMs: 5, latencyMs: 200 };
    await pull(stub, { ticket: a?.id ?? "", lane: "lane-a", seq: 1, want: 94, slots: 128, timing });
    await pull(stub, { ticket: b?.id ?? "", lane: "lane-b", seq: 1, want: 6, slots: 128, timing });
    expect((await pull(stub, { ticket: a?.id ?? "", lane: "lane-a", seq: 2, want: 0, slots: 128, timing, running: 94 })).retire).toBeUndefined();
    // Lane a's 128 cover the window of 100 and lane b's 6 (+1), short of 150: lane b still goes.
    const thin = await pull(stub, { ticket: b?.id ?? "", lane: "lane-b", seq: 2, want: 0, slots: 128, timing, running: 6 });
    expect(thin.retire).toBe(true);
    // A lane running 30 would need 131: it stays.
    const { input: wide, stub: wideStub } = newSwarm(1_000, { concurrency: 100 });
    await wideStub.start(wide);
    const [c, d] = await tickets(wideStub);
    await pull(wideStub, { ticket: c?.id ?? "", lane: "lane-c", seq: 1, want: 70, slots: 128, timing });
    await pull(wideStub, { ticket: d?.id ?? "", lane: "lane-d", seq: 1, want: 30, slots: 128, timing });
    await pull(wideStub, { ticket: c?.id ?? "", lane: "lane-c", seq: 2, want: 0, slots: 128, timing, running: 70 });
    const kept = await pull(wideStub, { ticket: d?.id ?? "", lane: "lane-d", seq: 2, want: 0, slots: 128, timing, running: 30 });
    expect(kept.retire).toBeUndefined();
  });

  /**
   * A header-bound swarm of 1,000 tasks at W = 100: its 17 lanes each take 6 with `slots` slots,
   * and then every lane but lane 0 says it runs 6 (lane 0, which has said nothing yet, runs fewest:
   * none of them retires). Returns the stub, the lanes and lane 0's first grant.
   */
  async function headerBoundLanes(slots: number, timing: { ttfbMs: number; latencyMs: number }) {
    const { input, stub } = newSwarm(1_000, { concurrency: 100 });
    await stub.start(input);
    const lanes = await tickets(stub);
    expect(lanes).toHaveLength(17);
    const firsts: Pulled[] = [];
    for (const [i, t] of lanes.entries()) firsts.push(await pull(stub, { ticket: t.id, lane: `lane-${i}`, seq: 1, want: 6, slots, timing }));
    for (const [i, t] of lanes.entries()) {
      if (i > 0) expect((await pull(stub, { ticket: t.id, lane: `lane-${i}`, seq: 2, want: 0, slots, timing, running: 6 })).retire).toBeUndefined();
    }
    return { stub, lane0: lanes[0]?.id ?? "", first0: firsts[0] as Pulled };
  }

  it("keeps header-bound lanes (6 running of 8 slots) while the others cover less than half the window again", async () => {
    const timing = { ttfbMs: 484, latencyMs: 666 };
    const { stub, lane0 } = await headerBoundLanes(8, timing);
    // Then lane 0: 16 others × 8 = 128 cover the window (100) and its 6, but not half the window again.
    const answer = await pull(stub, { ticket: lane0, lane: "lane-0", seq: 2, want: 0, slots: 8, timing, running: 6 });
    expect(answer.retire).toBeUndefined();
  });

  it("keeps a header-bound lane whose calls all just ended: it runs none for a moment, but it carried its slots", async () => {
    // Headers with the answer; each lane's timing gave it 7 slots (one more than the 6 it runs).
    const timing = { ttfbMs: 600, latencyMs: 666 };
    const { stub, lane0, first0 } = await headerBoundLanes(7, timing);
    // Lane 0's six calls end together: it reports them, runs none, and asks for six more. The
    // others' 16 × 7 = 112 slots cover the window (100) and one, so counted as a thin lane (it runs
    // 0) it was retired, and the tasks it would have run waited a round for another lane's slots.
    const ended = await pull(stub, {
      ticket: lane0,
      lane: "lane-0",
      seq: 2,
      want: 6,
      slots: 7,
      timing,
      running: 0,
      reports: reportAll(first0, ok("done")),
    });
    expect(ended.retire).toBeUndefined();
    expect(ended.granted).toHaveLength(6);
  });

  it.each([
    ["a small swarm", 5, 3],
    ["a window larger than a lane", 300, 300],
    ["fewer tasks than the window", 200, 1_500],
  ])(
    "start sends ceil(min(window, tasks) / LANE_SLOTS) tickets, at most FIRST_LANES_MAX before a lane has timed a call: %s",
    async (_label, taskCount, concurrency) => {
      const { input, stub } = newSwarm(taskCount, { concurrency });
      await stub.start(input);
      const expected = Math.min(FIRST_LANES_MAX, Math.ceil(Math.min(taskCount, concurrency) / LANE_SLOTS));
      expect((await billable(stub)).queue_messages_sent).toBe(expected);
      const open = await tickets(stub);
      expect(open).toHaveLength(expected);
      expect(open.every((t) => t.state === "sent" && t.slots === LANE_SLOTS)).toBe(true);
    },
  );

  it.each([
    ["header-bound lanes (6 a lane): every lane the window needs at once", 300, { slots: 6, latencyMs: 1_000 }, 50, LANE_SLOTS],
    ["lanes of 8 (headers a little before the answer): the same, counted as header-bound", 300, { slots: 8, latencyMs: 666 }, 50, LANE_SLOTS],
    ["lanes of 64 (early headers), ten windows of tasks: counted for 64 each", 3_000, { slots: 64, latencyMs: 480 }, 5, 64],
    // A prior recorded without its time to headers: 64 slots at 480 ms imply headers after 45 ms,
    // and a lane starts 6 × 250 / 45 = 33 within FILL_MIN_MS (a tenth of the call is less).
    ["lanes of 64, one window of tasks: lanes that fill it within FILL_MIN_MS", 300, { slots: 64, latencyMs: 480 }, 10, 33],
    ["lanes of 64 with headers after 2 ms, one window: 5 lanes fill it within a tenth of a call", 300, { slots: 64, latencyMs: 480, ttfbMs: 2 }, 5, 64],
    ["lanes of 36 (headers at 500 ms of 3 s), two windows: within a fifth of a call, 7 a lane", 600, { slots: 36, latencyMs: 3_000, ttfbMs: 500 }, 43, 7],
  ])("starts from the tenant's last lanes, %s", async (_label, taskCount, lanePrior, expected, slots) => {
    // A window of 300: 50 header-bound lanes, where with no prior the room sends FIRST_LANES_MAX
    // until a lane has timed a call (with headers at the answer, a whole call later).
    expect(FIRST_LANES_MAX).toBeLessThan(50);
    const { input, stub } = newSwarm(taskCount, { concurrency: 300 });
    await stub.start({ ...input, lanePrior });
    expect((await billable(stub)).queue_messages_sent).toBe(expected);
    expect((await tickets(stub)).every((t) => t.slots === slots)).toBe(true);
  });

  it.each([
    ["a header-bound prior: from the first answer on", { slots: 6, latencyMs: 1_000 }, true],
    ["an early prior (lanes of 64): not", { slots: 64, latencyMs: 480 }, false],
  ])("tells its lanes it sends the lanes of 6 the window needs (gateBound), %s", async (_label, lanePrior, gateBound) => {
    // A lane then makes no pull to say its first headers are slow: the room has nothing to learn.
    const { input, stub } = newSwarm(300, { concurrency: 300 });
    await stub.start({ ...input, lanePrior });
    const [first] = await tickets(stub);
    const answer = await pull(stub, { ticket: first?.id ?? "", lane: "lane-0", seq: 1, want: LANE_SLOTS });
    expect(answer.gateBound === true).toBe(gateBound);
  });

  it.each([
    // The pull that says so gets no standby: every task fits the window, and with no call ended the
    // room keeps its last window for the lanes' free slots (the lanes it sends next run the rest).
    ["headers after 498 ms: every lane the window needs, at once", 498, 50, 0],
    ["headers after 100 ms: FIRST_LANES_MAX until a lane has timed a call", 100, FIRST_LANES_MAX, 0],
  ])("on no prior, hears a lane's first headers before any call has ended: %s", async (_label, firstHeadersMs, expected, standby) => {
    const { input, stub } = newSwarm(300, { concurrency: 300 });
    await stub.start(input);
    const [first] = await tickets(stub);
    expect((await billable(stub)).queue_messages_sent).toBe(FIRST_LANES_MAX);
    await pull(stub, { ticket: first?.id ?? "", lane: "lane-0", seq: 1, want: LANE_SLOTS });
    const told = await pull(stub, { ticket: first?.id ?? "", lane: "lane-0", seq: 2, want: 0, running: LANE_SLOTS, firstHeadersMs, standby: 3 });
    expect(told.granted.filter((task) => task.standby === true)).toHaveLength(standby);
    await runAlarmNow(stub);
    expect((await billable(stub)).queue_messages_sent).toBe(expected);
    expect((await tickets(stub)).every((t) => t.slots === LANE_SLOTS)).toBe(true);
  });

  it("issues more tickets from the alarm when a lane reports fewer slots than assumed", async () => {
    const { input, stub } = newSwarm(10, { concurrency: 10 });
    await stub.start(input);
    // LANE_SLOTS 6: a window of 10 starts with two lanes, assumed header-bound.
    const started = await tickets(stub);
    expect(started.map((t) => t.slots)).toEqual([6, 6]);
    const [ticket] = started;
    if (ticket === undefined) throw new Error("no ticket");
    // A lane that has timed its calls (headers after 150 ms of 200): 2 slots.
    await pull(stub, { ticket: ticket.id, slots: 2, want: 2, timing: { ttfbMs: 150, latencyMs: 200 } });
    expect((await billable(stub)).queue_messages_received).toBe(1);
    // 2 slots and the other lane's assumed 6 cover 8 of the 10 the window can run: one more lane,
    // counted for the 2 the measured lane reported.
    const sent = await waitFor(
      async () => {
        await runDurableObjectAlarm(stub);
        return (await billable(stub)).queue_messages_sent;
      },
      (n) => n >= 3,
    );
    expect(sent).toBe(3);
    await runAlarmNow(stub);
    expect((await billable(stub)).queue_messages_sent).toBe(3);
    expect((await tickets(stub)).map((t) => t.slots).sort()).toEqual([2, 2, 6]);
  });

  it("sends no lane for a lane's shrunken slots while that lane runs the tasks: it covers what it runs", async () => {
    const { input, stub } = newSwarm(12, { concurrency: 20 });
    await stub.start(input);
    // 12 tasks, LANE_SLOTS 6: two lanes, assumed header-bound.
    const [ticket] = await tickets(stub);
    if (ticket === undefined) throw new Error("no ticket");
    // The lane times early headers and takes 10 of the 12 tasks.
    const first = await pull(stub, { ticket: ticket.id, lane: "lane-a", seq: 1, slots: 128, want: 10, timing: { ttfbMs: 4, latencyMs: 200 } });
    expect(first.granted).toHaveLength(10);
    // A busy machine then sees its headers late: it reports 2 slots while its 10 tasks run (they wait
    // at its gate). Counted for its 2, the open slots (2 + the other lane's 6) would fall short of
    // the 12 the swarm can run, and the room would send lanes for the 10 tasks this one holds.
    await pull(stub, { ticket: ticket.id, lane: "lane-a", seq: 2, slots: 2, want: 0, running: 10, timing: { ttfbMs: 150, latencyMs: 200 } });
    await runAlarmNow(stub);
    expect((await billable(stub)).queue_messages_sent).toBe(2);
    // Once it runs only what its slots carry, the shortfall is real: lanes come for it.
    await pull(stub, { ticket: ticket.id, lane: "lane-a", seq: 3, slots: 2, want: 0, running: 2, timing: { ttfbMs: 150, latencyMs: 200 } });
    const sent = await waitFor(
      async () => {
        await runAlarmNow(stub);
        return (await billable(stub)).queue_messages_sent;
      },
      (n) => n > 2,
    );
    expect(sent).toBe(4);
  });

  it("closes a ticket nobody pulled by its deadline and issues another", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    const [lost] = await tickets(stub);
    if (lost === undefined) throw new Error("no ticket");
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec("UPDATE tickets SET expires_at = ? WHERE id = ?", Date.now() - 1, lost.id);
    });
    await reloadCaches(stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const open = await tickets(stub);
    expect(open.map((t) => t.id)).not.toContain(lost.id);
    expect(open).toHaveLength(1);
    expect((await billable(stub)).queue_messages_sent).toBe(2);
  });

  it("sends no ticket while every open task waits for a later retry, and one when the retry is due", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 3 });
    await stub.start(input);
    const [ticket] = await tickets(stub);
    if (ticket === undefined) throw new Error("no ticket");
    await pull(stub, { ticket: ticket.id, want: 1 });
    const later: TaskOutcome = { ...rateLimited, retryAfterMs: 600_000 };
    const answer = await pull(stub, { ticket: ticket.id, reports: [report("task-001", 1, later)], want: 1 });
    expect(answer.granted).toEqual([]);
    expect(answer.retryInMs).toBeGreaterThan(590_000);
    // The lane will not wait 10 minutes: it ends, and its ticket closes.
    await pull(stub, { ticket: ticket.id, want: 0, final: true });
    await runAlarmNow(stub);
    expect((await billable(stub)).queue_messages_sent).toBe(1);
    await makeRetriesDue(stub);
    await runAlarmNow(stub);
    expect((await billable(stub)).queue_messages_sent).toBe(2);
  });

  it("tries a failed ticket send again a second later, not at once", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    const [ticket] = await tickets(stub);
    if (ticket === undefined) throw new Error("no ticket");
    type Queues = { short: Pick<Queue, "sendBatch"> };
    let real: Queues["short"] | null = null;
    // The queue refuses every send from now on.
    await runInDurableObject(stub, (instance) => {
      const { queues } = (instance as unknown as { dispatch: { queues: Queues } }).dispatch;
      real = queues.short;
      queues.short = {
        sendBatch: () => Promise.reject(new Error("queue unavailable")),
      };
    });
    // The dead ticket asks for an alarm now; it runs, as the runtime would run it, and its send fails.
    await stub.recordDeadTicket(ticket.id);
    const before = Date.now();
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await tickets(stub)).toEqual([]);
    const alarm = await runInDurableObject(stub, (_i, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThanOrEqual(before + 1_000);
    // The queue is back: the next alarm sends the ticket.
    await runInDurableObject(stub, (instance) => {
      const { queues } = (instance as unknown as { dispatch: { queues: Queues } }).dispatch;
      if (real !== null) queues.short = real;
    });
    await runAlarmNow(stub);
    expect(await tickets(stub)).toHaveLength(1);
    expect((await billable(stub)).queue_messages_sent).toBe(2);
  });

  it("writes the index row while its first tickets are still being sent", async () => {
    const { input, stub } = newSwarm(2);
    type Queues = { short: Pick<Queue, "sendBatch"> };
    // The send answers only once the test opens it (a local queue's answered once the agent had
    // started the lanes' executors): the row must not wait for it.
    const send = { called: false, open: false };
    await runInDurableObject(stub, (instance) => {
      const { queues } = (instance as unknown as { dispatch: { queues: Queues } }).dispatch;
      queues.short = {
        sendBatch: async () => {
          send.called = true;
          while (!send.open) await scheduler.wait(5);
          return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } };
        },
      };
    });
    const started = stub.start(input);
    let indexed: unknown = null;
    while (indexed === null) {
      indexed = await env.LEDGER_DB.prepare("SELECT id FROM swarms WHERE id = ?").bind(input.swarmId).first();
      if (indexed === null) await scheduler.wait(5);
    }
    expect(send).toEqual({ called: true, open: false });
    send.open = true;
    expect(await started).toEqual({ created: true });
    expect(await tickets(stub)).toHaveLength(1);
    expect((await billable(stub)).queue_messages_sent).toBe(1);
  });

  it("tries a failed ledger flush again 5 s later, not at the next flush interval", async () => {
    const { input, stub } = newSwarm(2, { concurrency: 2 });
    await stub.start(input);
    const granted = await pull(stub, { want: 2 });
    const [first] = granted.granted;
    if (first === undefined) throw new Error("nothing granted");
    let real: D1Database | null = null;
    // D1 refuses every write from now on.
    await runInDurableObject(stub, (instance) => {
      const ledger = (instance as unknown as { ledger: { db: D1Database } }).ledger;
      real = ledger.db;
      ledger.db = {
        prepare: () => {
          throw new Error("D1 unavailable");
        },
      } as unknown as D1Database;
    });
    // One call row to flush: the alarm is due a flush interval later.
    await pull(stub, { reports: [report(first.taskId, first.attempt, ok("x"))], want: 0 });
    const before = Date.now();
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const alarm = await runInDurableObject(stub, (_i, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThanOrEqual(before + 5_000);
    // D1 is back: the next alarm flushes the row.
    await runInDurableObject(stub, (instance) => {
      const ledger = (instance as unknown as { ledger: { db: D1Database } }).ledger;
      if (real !== null) ledger.db = real;
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const unflushed = await runInDurableObject(
      stub,
      (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE rowid > (SELECT flushed_rowid FROM ledger_sync)").one().n,
    );
    expect(unflushed).toBe(0);
  });

  it("sends no ticket once the swarm has ended or was cancelled", async () => {
    const done = newSwarm(2, { concurrency: 2 });
    await done.stub.start(done.input);
    const granted = await pull(done.stub, { want: 2 });
    const last = await pull(done.stub, { reports: reportAll(granted, ok("x")), want: 2 });
    expect(last).toMatchObject({ granted: [], stop: true });
    expect(await tickets(done.stub)).toEqual([]);
    await runAlarmNow(done.stub);
    // A late lane gets nothing and opens nothing.
    expect(await pull(done.stub, { ticket: "late", want: 2 })).toMatchObject({ granted: [], stop: true });
    await runAlarmNow(done.stub);
    expect(await tickets(done.stub)).toEqual([]);
    expect((await billable(done.stub)).queue_messages_sent).toBe(1);

    const cancelled = newSwarm(300, { concurrency: 300 });
    await cancelled.stub.start(cancelled.input);
    const sent = (await billable(cancelled.stub)).queue_messages_sent;
    await pull(cancelled.stub, { slots: 1, want: 1 });
    await cancelled.stub.cancel(TENANT);
    expect(await tickets(cancelled.stub)).toEqual([]);
    await runAlarmNow(cancelled.stub);
    await pull(cancelled.stub, { ticket: "late", slots: 1, want: 1 });
    await runAlarmNow(cancelled.stub);
    expect(await tickets(cancelled.stub)).toEqual([]);
    expect((await billable(cancelled.stub)).queue_messages_sent).toBe(sent);
  });
});

describe("SwarmRoom billable meters", () => {
  it("counts pulls as requests, first pulls under a ticket as deliveries, and the rows written here and in D1", async () => {
    const { swarmId, input, stub } = newSwarm(4, { concurrency: 4 });
    await stub.start(input);
    const a = await pull(stub, { ticket: "lane-a", want: 2 });
    const b = await pull(stub, { ticket: "lane-b", want: 2 });
    await pull(stub, { ticket: "lane-a", reports: reportAll(a, ok("a")), want: 2 });
    await pull(stub, { ticket: "lane-b", reports: reportAll(b, ok("b")), want: 0, final: true });
    await pull(stub, { ticket: "lane-a", want: 0, final: true });
    await runAlarmNow(stub);
    expect((await stub.getStatus(TENANT))?.state).toBe("completed");
    // The alarm the completion asked for has run (and asked for no other): nothing else will run.
    await waitFor(
      () => runInDurableObject(stub, (_i, state) => state.storage.getAlarm()),
      (at) => at === null,
    );

    const before = await billable(stub);
    expect(before.queue_messages_received).toBe(2);
    expect(before.do_rows_written).toBeGreaterThan(0);
    // Requests: the start, five pulls, an alarm and this status at least (the runtime may have run more alarms).
    expect(before.do_requests).toBeGreaterThanOrEqual(1 + 5 + 1 + 1);
    const ledgerRows = (await env.LEDGER_DB.prepare("SELECT COUNT(*) AS n FROM ledger WHERE swarm_id = ?").bind(swarmId).first<{ n: number }>())?.n ?? 0;
    expect(ledgerRows).toBe(4);
    // Every ledger row and at least one index row were written.
    expect(before.d1_rows_written).toBeGreaterThanOrEqual(ledgerRows + 1);

    // On an ended swarm nothing else runs: each pull is exactly one more request (and each status read one).
    for (let i = 0; i < 3; i += 1) await pull(stub, { ticket: "lane-a", want: 1 });
    const after = await billable(stub);
    expect(after.do_requests).toBe(before.do_requests + 3 + 1);
    expect(after.queue_messages_received).toBe(2);
    expect(after.d1_rows_written).toBe(before.d1_rows_written);
    expect(after.per_task).toEqual({
      queue_messages_sent: Math.round((after.queue_messages_sent / 4) * 1_000) / 1_000,
      queue_messages_received: 0.5,
      do_requests: Math.round((after.do_requests / 4) * 1_000) / 1_000,
      do_rows_written: Math.round((after.do_rows_written / 4) * 1_000) / 1_000,
      d1_rows_written: Math.round((after.d1_rows_written / 4) * 1_000) / 1_000,
    });
  });

  it("stores the figures status shows (they outlive the instance)", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    await pull(stub, { want: 2 });
    const shown = await billable(stub);
    const stored = await runInDurableObject(stub, (_i, state) =>
      state.storage.sql
        .exec<{ queue_sent: number; queue_received: number; do_rows_written: number; d1_rows_written: number }>(
          "SELECT queue_sent, queue_received, do_rows_written, d1_rows_written FROM meters",
        )
        .one(),
    );
    expect(stored).toEqual({
      queue_sent: shown.queue_messages_sent,
      queue_received: shown.queue_messages_received,
      do_rows_written: shown.do_rows_written,
      d1_rows_written: shown.d1_rows_written,
    });
  });
});

describe("SwarmRoom running totals", () => {
  /** The status counts, the budget's charged and reserved, against SQL, before and after a reload. */
  async function expectTotalsTrue(stub: Stub): Promise<void> {
    const status = await stub.getStatus(TENANT);
    const truth = await countsInStorage(stub);
    expect(status?.counts).toEqual(truth);
    const stored = await runInDurableObject(stub, (_i, state) => ({
      charged: state.storage.sql.exec<{ usd: number | null }>("SELECT SUM(charged_usd) AS usd FROM calls").one().usd ?? 0,
      reserved:
        state.storage.sql
          .exec<{ usd: number | null }>("SELECT SUM(reserved_usd) AS usd FROM tasks WHERE state IN ('dispatched', 'running', 'retry_wait')")
          .one().usd ?? 0,
      terminalReserved:
        state.storage.sql
          .exec<{ usd: number | null }>("SELECT SUM(reserved_usd) AS usd FROM tasks WHERE state IN ('succeeded', 'failed', 'cancelled', 'skipped_budget')")
          .one().usd ?? 0,
    }));
    expect(stored.terminalReserved).toBe(0);
    if (status?.budget) {
      expect(status.budget.charged_usd).toBeCloseTo(stored.charged, 12);
      expect(status.budget.reserved_usd).toBeCloseTo(stored.reserved, 12);
    }
    await reloadCaches(stub);
    const reloaded = await stub.getStatus(TENANT);
    expect(reloaded?.counts).toEqual(truth);
    if (status?.budget) expect(reloaded?.budget?.reserved_usd).toBeCloseTo(status.budget.reserved_usd, 12);
  }

  it("stay true through grants, retries, failures, deferrals, lease expiry and budget exhaustion", async () => {
    // Five worst cases ($0.000028 each) fit at once; the real spend ($0.00000555 a call) runs out after ~22 calls.
    const { input, stub } = newSwarm(30, { concurrency: 6, max_output_tokens: 64, max_attempts: 3 });
    input.spec = { ...input.spec, budget: { max_usd: 0.00015, fallback_at: 0.2 } };
    await stub.start(input);
    await expectTotalsTrue(stub);
    const first = await pull(stub, { want: 6 });
    expect(first.granted.length).toBeGreaterThan(3);
    await expectTotalsTrue(stub);
    const [t1, t2, t3, t4, t5] = first.granted;
    if (t1 === undefined || t2 === undefined || t3 === undefined || t4 === undefined || t5 === undefined) throw new Error("too few granted");
    await pull(stub, {
      reports: [
        report(t1.taskId, 1, ok("one")),
        report(t2.taskId, 1, rateLimited),
        report(t3.taskId, 1, unauthorized),
        { taskId: t4.taskId, attempt: 1, outcome: deferred(0), calls: [] },
      ],
      want: 0,
    });
    await expectTotalsTrue(stub);
    await endLeases(stub, [t5.taskId]);
    await runAlarmNow(stub);
    await expectTotalsTrue(stub);
    await makeRetriesDue(stub);
    let pulled = await pull(stub, { ticket: "lane-2", want: 6 });
    await expectTotalsTrue(stub);
    for (let round = 0; round < 30 && pulled.granted.length > 0; round += 1) {
      pulled = await pull(stub, { ticket: "lane-2", reports: reportAll(pulled, ok("x")), want: 6 });
      await expectTotalsTrue(stub);
    }
    // Whatever is still leased (the first lane's) finishes; then the budget has ended the rest.
    const stillRunning = Object.entries(await taskStates(stub))
      .filter(([, s]) => s === "running")
      .map(([id]) => id);
    const attempts = await runInDurableObject(stub, (_i, state) =>
      Object.fromEntries(
        state.storage.sql
          .exec<{ id: string; attempts: number }>("SELECT id, attempts FROM tasks")
          .toArray()
          .map((r) => [r.id, r.attempts]),
      ),
    );
    await pull(stub, { reports: stillRunning.map((id) => report(id, attempts[id] ?? 1, ok("x"))), want: 0, final: true });
    await expectTotalsTrue(stub);
    const status = await stub.getStatus(TENANT);
    expect(status?.counts.skipped_budget).toBeGreaterThan(0);
    expect(status?.counts.queued).toBe(0);
    expect(status?.counts.running).toBe(0);
    expect(status?.state).toBe("completed_with_failures");
    expect(status?.cost_usd).toBeLessThanOrEqual(0.00015);
  });

  it("stay true through cancel and the reports that come after it", async () => {
    const { input, stub } = newSwarm(8, { concurrency: 4, max_attempts: 3 });
    await stub.start(input);
    const granted = await pull(stub, { want: 4 });
    await pull(stub, { reports: [report("task-001", 1, rateLimited)], want: 0 });
    await expectTotalsTrue(stub);
    await stub.cancel(TENANT);
    await expectTotalsTrue(stub);
    await pull(stub, { reports: granted.granted.slice(1).map((g) => report(g.taskId, g.attempt, rateLimited)), want: 4 });
    await expectTotalsTrue(stub);
    expect((await stub.getStatus(TENANT))?.counts).toMatchObject({ queued: 0, running: 0, cancelled: 8 });
  });
});

describe("SwarmRoom: no call vanishes from the bill", () => {
  const start = (taskId: string, attempt: number, turn = 1) => ({
    taskId,
    attempt,
    turn,
    model: "mock-1",
    promptTokens: 40,
    maxTokens: 100,
    startedAt: Date.now(),
  });

  it("a call noted and never reported becomes an `unknown` ledger row at its worst case when its lease ends; the retry is a new call id", async () => {
    const { swarmId, input, stub } = newSwarm(2, { max_output_tokens: 100 });
    await stub.start(input);
    await pull(stub, { want: 2 });
    await stub.startCalls([start("task-001", 1), start("task-002", 1)]);
    // task-002's call is reported; task-001's lane dies with its call in flight.
    await pull(stub, { reports: [report("task-002", 1, ok("done"))], want: 0 });
    await endLeases(stub);
    await runAlarmNow(stub);

    const status = await stub.getStatus(TENANT);
    expect(status?.usage.calls).toBe(2);
    expect(status?.estimated_calls).toBe(1);
    const ledger = await env.LEDGER_DB.prepare(
      "SELECT call_id, status, prompt_tokens, completion_tokens, cost_usd FROM ledger WHERE swarm_id = ? ORDER BY call_id",
    )
      .bind(swarmId)
      .all();
    expect(ledger.results).toEqual([
      { call_id: `${swarmId}:task-001:1:1`, status: "unknown", prompt_tokens: 40, completion_tokens: 100, cost_usd: expect.any(Number) },
      { call_id: `${swarmId}:task-002:1:1`, status: "ok", prompt_tokens: 20, completion_tokens: 10, cost_usd: expect.any(Number) },
    ]);
    // The task runs again under a new attempt: a new call id, never the lost one's.
    const again = await pull(stub, { ticket: "lane-2", want: 1 });
    expect(attemptsOf(again)).toEqual([["task-001", 2]]);
  });

  it("a call reported after its estimate (a lane slower than its lease) replaces it, in the room and in D1, and is counted once", async () => {
    const { swarmId, input, stub } = newSwarm(1, { max_output_tokens: 100 });
    await stub.start(input);
    await pull(stub, { want: 1 });
    await stub.startCalls([start("task-001", 1)]);
    await endLeases(stub);
    await runAlarmNow(stub);
    expect((await stub.getStatus(TENANT))?.estimated_calls).toBe(1);

    await pull(stub, { reports: [report("task-001", 1, ok("late but real"))], want: 0 });
    await runAlarmNow(stub);

    const status = await stub.getStatus(TENANT);
    expect(status?.usage).toMatchObject({ calls: 1, prompt_tokens: 20, completion_tokens: 10 });
    expect(status?.estimated_calls).toBe(0);
    expect(status?.counts.succeeded).toBe(1);
    const ledger = await env.LEDGER_DB.prepare("SELECT status, prompt_tokens, completion_tokens FROM ledger WHERE swarm_id = ?").bind(swarmId).all();
    expect(ledger.results).toEqual([{ status: "ok", prompt_tokens: 20, completion_tokens: 10 }]);
  });

  it("a call noted then recorded leaves nothing open: no estimate, and a repeated note changes nothing", async () => {
    const { input, stub } = newSwarm(1);
    await stub.start(input);
    await pull(stub, { want: 1 });
    await stub.startCalls([start("task-001", 1)]);
    await pull(stub, { reports: [report("task-001", 1, ok("x"))], want: 0 });
    await stub.startCalls([start("task-001", 1)]);
    await runAlarmNow(stub);
    const open = await runInDurableObject(stub, (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM open_calls").one().n);
    expect(open).toBe(0);
    const status = await stub.getStatus(TENANT);
    expect(status?.estimated_calls).toBe(0);
    expect(status?.usage.calls).toBe(1);
  });

  it("a deferral that noted no call gives its attempt back; one whose noted call is lost is billed and spends it", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 1 });
    await stub.start(input);
    await pull(stub, { want: 1 });
    await stub.startCalls([start("task-001", 1)]);
    // The lane reports a deferral without the call (its record was lost): the call is billed.
    await pull(stub, { reports: [{ taskId: "task-001", attempt: 1, outcome: deferred(0), calls: [] }], want: 0 });
    const status = await stub.getStatus(TENANT);
    expect(status?.estimated_calls).toBe(1);
    expect(status?.usage.calls).toBe(1);
  });
});

describe("SwarmRoom: the grant notes a task's first call", () => {
  const notesOf = (stub: Stub) =>
    runInDurableObject(stub, (_i, state) =>
      state.storage.sql.exec<{ call_id: string; note_until: number | null }>("SELECT call_id, note_until FROM open_calls ORDER BY call_id").toArray(),
    );

  it("a named lane's grant carries the note (turn and deadline); an unnamed lane's does not", async () => {
    const { input, stub } = newSwarm(2);
    await stub.start(input);
    const named = await pull(stub, { lane: "lane-a", seq: 1, want: 1 });
    expect(named.granted[0]).toMatchObject({ notedTurn: 1, notedUntil: expect.any(Number) });
    expect((named.granted[0]?.notedUntil ?? 0) - Date.now()).toBeLessThanOrEqual(2_000);
    const unnamed = await pull(stub, { ticket: "lane-2", want: 1 });
    expect(unnamed.granted[0]?.notedTurn).toBeUndefined();
    expect(await notesOf(stub)).toHaveLength(1);
  });

  it("a standby task's note holds as long as its lease: the lane starts it seconds later without a note of its own", async () => {
    const { swarmId, input, stub } = newSwarm(4, { concurrency: 2 });
    await stub.start(input);
    // Calls of uneven latency: the lanes' share and the window's room decide, not the last-window rule.
    await seedUnevenCalls(stub);
    const granted = (await pull(stub, { lane: "lane-a", seq: 1, want: 2, standby: 2, running: 0 })).granted;
    const standby = granted.filter((g) => g.standby === true);
    const windowed = granted.filter((g) => g.standby !== true);
    expect(standby).toHaveLength(2);
    for (const g of windowed) expect((g.notedUntil ?? 0) - Date.now()).toBeLessThanOrEqual(2_000);
    // A standby task waits for one of the lane's tasks to end: its note holds until its lease does.
    for (const g of standby) expect(g.notedUntil).toBe(g.leaseUntil);
    expect((standby[0]?.leaseUntil ?? 0) - Date.now()).toBeGreaterThan(2_000);
    // 5 s later the lane lists every started call: only a window note past its time goes.
    await pull(stub, {
      lane: "lane-a",
      seq: 2,
      want: 0,
      started: windowed.map((g) => ({ taskId: g.taskId, attempt: g.attempt, turn: 1 })).slice(0, 1),
      held: standby.map((g) => ({ taskId: g.taskId, attempt: g.attempt })),
      sentAt: Date.now() + 5_000,
    });
    const notes = (await notesOf(stub)).map((n) => n.call_id);
    expect(notes).toContain(`${swarmId}:${windowed[0]?.taskId}:1:1`);
    expect(notes).not.toContain(`${swarmId}:${windowed[1]?.taskId}:1:1`);
    for (const g of standby) expect(notes).toContain(`${swarmId}:${g.taskId}:1:1`);
  });

  it("a noted call the lane lists as started is billed if its lane dies; one it never started goes unbilled", async () => {
    const { swarmId, input, stub } = newSwarm(2);
    await stub.start(input);
    await pull(stub, { lane: "lane-a", seq: 1, want: 2 });
    // task-001's call started (the lane lists it); task-002's did not, and its note's time is over.
    await pull(stub, {
      lane: "lane-a",
      seq: 2,
      want: 0,
      started: [{ taskId: "task-001", attempt: 1, turn: 1 }],
      sentAt: Date.now() + 5_000,
    });
    expect((await notesOf(stub)).map((n) => n.call_id)).toEqual([`${swarmId}:task-001:1:1`]);
    // The lane dies: its lease ends, and the started call is billed at its estimate.
    await endLeases(stub);
    await runAlarmNow(stub);
    const status = await stub.getStatus(TENANT);
    expect(status?.usage.calls).toBe(1);
    expect(status?.estimated_calls).toBe(1);
  });

  it("a deferral whose noted call never started gives its attempt back and bills nothing", async () => {
    const { input, stub } = newSwarm(1, { max_attempts: 1 });
    await stub.start(input);
    await pull(stub, { lane: "lane-a", seq: 1, want: 1 });
    await pull(stub, {
      lane: "lane-a",
      seq: 2,
      reports: [{ taskId: "task-001", attempt: 1, outcome: deferred(0), calls: [] }],
      want: 0,
      started: [],
      sentAt: Date.now(),
    });
    expect(await notesOf(stub)).toEqual([]);
    expect((await stub.getStatus(TENANT))?.usage.calls).toBe(0);
    expect(attemptsOf(await pull(stub, { ticket: "lane-2", want: 1 }))).toEqual([["task-001", 2]]);
  });

  it("a partial `started` (the reported attempts' calls only) drops no other note; the next whole list does", async () => {
    const { swarmId, input, stub } = newSwarm(3);
    await stub.start(input);
    const granted = await pull(stub, { lane: "lane-a", seq: 1, want: 3 });
    const first = granted.granted.find((g) => g.taskId === "task-001");
    if (first === undefined) throw new Error("task-001 was not granted");
    // task-001 is reported; the pull lists its call only: task-002's and task-003's notes, past
    // their time and unlisted, stay (the lane may have started them).
    await pull(stub, {
      lane: "lane-a",
      seq: 2,
      reports: [report("task-001", first.attempt, ok("one"))],
      want: 0,
      started: [{ taskId: "task-001", attempt: first.attempt, turn: 1 }],
      startedPartial: true,
      sentAt: Date.now() + 5_000,
    });
    expect((await notesOf(stub)).map((n) => n.call_id)).toEqual([`${swarmId}:task-002:1:1`, `${swarmId}:task-003:1:1`]);
    // The whole list names task-002 only: task-003's call never started, and its note goes unbilled.
    await pull(stub, { lane: "lane-a", seq: 3, want: 0, started: [{ taskId: "task-002", attempt: 1, turn: 1 }], sentAt: Date.now() + 5_000 });
    expect((await notesOf(stub)).map((n) => n.call_id)).toEqual([`${swarmId}:task-002:1:1`]);
    expect((await stub.getStatus(TENANT))?.usage.calls).toBe(1);
  });

  it("an explicit note confirms the grant's note: a later pull that does not list it leaves it", async () => {
    const { swarmId, input, stub } = newSwarm(1);
    await stub.start(input);
    await pull(stub, { lane: "lane-a", seq: 1, want: 1 });
    await stub.startCalls([{ taskId: "task-001", attempt: 1, turn: 1, model: "mock-1", promptTokens: 10, maxTokens: 10, startedAt: Date.now() }]);
    await pull(stub, { lane: "lane-a", seq: 2, want: 0, started: [], sentAt: Date.now() + 5_000 });
    expect(await notesOf(stub)).toEqual([{ call_id: `${swarmId}:task-001:1:1`, note_until: null }]);
  });
});

describe("SwarmRoom: a finished swarm goes quiet", () => {
  it("once its last rows reach D1 it keeps no alarm, so its Durable Object can be evicted", async () => {
    const { input, stub } = newSwarm(3);
    await stub.start(input);
    const granted = await pull(stub, { lane: "lane-a", seq: 1, want: 3 });
    await stub.startCalls([{ taskId: "task-003", attempt: 1, turn: 2, model: "mock-1", promptTokens: 5, maxTokens: 5, startedAt: Date.now() }]);
    await pull(stub, {
      lane: "lane-a",
      seq: 2,
      reports: reportAll(granted, ok("done")),
      want: 0,
      final: true,
      started: granted.granted.map((g) => ({ taskId: g.taskId, attempt: g.attempt, turn: 1 })),
      sentAt: Date.now(),
    });
    expect((await stub.getStatus(TENANT))?.state).toBe("completed");
    // Each alarm that fires runs, as the runtime would, until none is set.
    for (let i = 0; i < 10 && (await runDurableObjectAlarm(stub)); i += 1) {
      // the alarm ran; it may have set the next one
    }
    expect(await runInDurableObject(stub, (_i, state) => state.storage.getAlarm())).toBeNull();
    // The stray note (a turn never reported) was billed when the swarm ended, not left open.
    const open = await runInDurableObject(stub, (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM open_calls").one().n);
    expect(open).toBe(0);
  });
});

describe("SwarmRoom fail fast (limits.stop_after_failures)", () => {
  const invalidOutput: TaskOutcome = {
    kind: "failed",
    class: "invalid_output",
    retryable: false,
    retryAfterMs: null,
    message: "the answer does not match response_format, also after a repair turn: not JSON",
  };

  it("stops after that many of the same permanent failure in a row: running calls are recorded, the rest skipped, the reason says why, rerun takes them", async () => {
    const { input, stub } = newSwarm(100, { concurrency: 5, stop_after_failures: 3 });
    await stub.start(input);
    const first = await pull(stub, { want: 5 });
    expect(grantedIds(first)).toEqual(["task-001", "task-002", "task-003", "task-004", "task-005"]);
    // Three fail the same way; two are still running.
    const tripped = await pull(stub, { reports: reportAll({ ...first, granted: first.granted.slice(0, 3) }, invalidOutput), want: 3 });
    expect(tripped.granted).toEqual([]);
    expect(tripped.transfer).toBe(false);
    expect(countStates(await taskStates(stub))).toEqual({ failed: 3, running: 2, skipped: 95 });
    const during = await stub.getStatus(TENANT);
    expect(during?.state).toBe("running");
    expect(during?.counts).toMatchObject({ failed: 3, running: 2, skipped: 95, queued: 0 });
    expect(during?.reason).toBe(
      'stopped early: 3 tasks in a row failed with invalid_output (limits.stop_after_failures), e.g. "the answer does not match response_format, also after a repair turn: not JSON"; the tasks not yet run are skipped — fix the cause and rerun them (POST /v1/swarms/:id/rerun {"tasks":"not_succeeded"})',
    );
    // The running ones finish and are recorded: a success (a late success does not restart the
    // swarm), and a retryable failure, whose retry is not run but skipped.
    const last = await pull(stub, { reports: [report("task-004", 1, ok("fine")), report("task-005", 1, upstream500)], want: 5 });
    expect(last.granted).toEqual([]);
    expect(last.stop).toBe(true);
    const end = await stub.getStatus(TENANT);
    expect(end?.state).toBe("completed_with_failures");
    expect(end?.counts).toMatchObject({ succeeded: 1, failed: 3, skipped: 96, queued: 0, running: 0 });
    expect(end?.usage.calls).toBe(5);
    expect(end?.reason).toMatch(/^stopped early: 3 tasks in a row failed with invalid_output/);
    expect(await countsInStorage(stub)).toEqual(end?.counts);
    // Rerun (not_succeeded) takes the failed and the skipped tasks.
    const rerun = await stub.rerunInput(TENANT, "not_succeeded");
    expect(rerun).toMatchObject({ ok: true });
    expect(rerun !== null && "tasks" in rerun && Array.isArray(rerun.tasks) ? rerun.tasks.length : null).toBe(99);
  });

  it("a run at half the limit is handed no more tasks than it lacks; a success ends the run and the bound", async () => {
    const { input, stub } = newSwarm(100, { concurrency: 10, stop_after_failures: 4 });
    await stub.start(input);
    const first = await pull(stub, { want: 10 });
    expect(first.granted).toHaveLength(10);
    const [a, b, c] = first.granted;
    if (a === undefined || b === undefined || c === undefined) throw new Error("expected three grants");
    // Two of four: 8 still in flight, more than the 2 failures the run lacks, so nothing more.
    const bound = await pull(stub, { reports: [report(a.taskId, 1, invalidOutput), report(b.taskId, 1, invalidOutput)], want: 2 });
    expect(bound.granted).toEqual([]);
    expect(bound.transfer).toBe(true);
    const lifted = await pull(stub, { reports: [report(c.taskId, 1, ok("fine"))], want: 3 });
    expect(lifted.granted).toHaveLength(3);
  });

  it("a success between ends the run; another class starts its own; 0 turns it off", async () => {
    const { input, stub } = newSwarm(10, { concurrency: 10, stop_after_failures: 2 });
    await stub.start(input);
    const first = await pull(stub, { want: 10 });
    const [a, b, c, d] = first.granted;
    if (a === undefined || b === undefined || c === undefined || d === undefined) throw new Error("expected four grants");
    // auth, success, auth, invalid_output: never two of a class in a row.
    await pull(stub, {
      reports: [report(a.taskId, 1, unauthorized), report(b.taskId, 1, ok("y")), report(c.taskId, 1, unauthorized), report(d.taskId, 1, invalidOutput)],
      want: 0,
    });
    expect((await stub.getStatus(TENANT))?.counts).toMatchObject({ failed: 3, succeeded: 1, skipped: 0, running: 6 });

    const off = newSwarm(10, { concurrency: 10, stop_after_failures: 0 });
    await off.stub.start(off.input);
    const all = await pull(off.stub, { want: 10 });
    await pull(off.stub, { reports: reportAll(all, unauthorized), want: 0 });
    const status = await off.stub.getStatus(TENANT);
    expect(status?.counts).toMatchObject({ failed: 10, skipped: 0 });
    expect(status?.reason).toBe("10 task(s) failed");
  });

  it("the standby tasks a lane holds do not start after the stop: handed back, they end skipped", async () => {
    const { input, stub } = newSwarm(20, { concurrency: 2, stop_after_failures: 2 });
    await stub.start(input);
    const first = await pull(stub, { lane: "lane-a", want: 2, standby: 2 });
    const standby = first.granted.filter((g) => g.standby === true).map((g) => ({ taskId: g.taskId, attempt: g.attempt }));
    expect(standby).toHaveLength(2);
    const windowed = first.granted.filter((g) => g.standby !== true);
    const tripped = await pull(stub, {
      lane: "lane-a",
      reports: windowed.map((g) => report(g.taskId, g.attempt, unauthorized)),
      held: standby,
      want: 2,
      standby: 2,
    });
    expect(tripped.run ?? []).toEqual([]);
    expect(tripped.granted).toEqual([]);
    expect(tripped.transfer).toBe(false);
    expect(tripped.stop).toBe(true);
    await pull(stub, { lane: "lane-a", released: standby, want: 0, final: true });
    const end = await stub.getStatus(TENANT);
    expect(end?.state).toBe("completed_with_failures");
    expect(end?.counts).toMatchObject({ failed: 2, skipped: 18, succeeded: 0 });
    // The standby tasks' grant notes were dropped unbilled: two calls, the two that ran.
    expect(end?.usage.calls).toBe(2);
  });
});

describe("SwarmRoom prompt-cache warm-up (limits.cache_warmup)", () => {
  /** About 2,000 tokens shared by every task: over the 1,024 the providers cache. */
  const LONG_SYSTEM = "You are a careful reviewer. ".repeat(300);

  async function startShared(limits: LimitsInput = {}, system = LONG_SYSTEM) {
    const swarm = newSwarm(10, { concurrency: 5, ...limits });
    swarm.input.spec = { ...swarm.input.spec, system };
    await swarm.stub.start(swarm.input);
    return swarm;
  }

  /** A pull that is still waiting in the room (it resolves only at the warm-up's release or its deadline, 5 s away). */
  function watch(pulled: Promise<Pulled>): { done: () => boolean; answer: Promise<Pulled> } {
    let done = false;
    const answer = pulled.then((value) => {
      done = true;
      return value;
    });
    return { done: () => done, answer };
  }

  it("starts one task; another lane's pull waits in the room; the first call's headers (`warmed`) release the rest to both lanes at once", async () => {
    const { stub } = await startShared();
    const first = await pull(stub, { want: 5 });
    expect(grantedIds(first)).toEqual(["task-001"]);
    expect(first.granted[0]?.warmup).toBe(true);
    const other = watch(pull(stub, { ticket: "lane-2", want: 5 }));
    // The room answers other requests meanwhile; the idle lane's pull is still held.
    expect((await stub.getStatus(TENANT))?.counts.running).toBe(1);
    expect(other.done()).toBe(false);
    // The warm-up call has its headers: the lane says so with a pull that takes its free slots.
    const warmed = await pull(stub, { warmed: true, running: 1, want: 2 });
    expect(grantedIds(warmed)).toEqual(["task-002", "task-003"]);
    expect(warmed.granted.some((task) => task.warmup === true)).toBe(false);
    // The held pull is answered with what the window has left.
    const released = await other.answer;
    expect(grantedIds(released)).toEqual(["task-004", "task-005"]);
  });

  it("without headers, releases them when its call is reported (the same pull fills the window)", async () => {
    const { stub } = await startShared();
    const first = await pull(stub, { want: 5 });
    expect(grantedIds(first)).toEqual(["task-001"]);
    // The first answer is in: the same pull fills the window.
    const released = await pull(stub, { reports: reportAll(first, ok("a")), want: 5 });
    expect(grantedIds(released)).toEqual(["task-002", "task-003", "task-004", "task-005", "task-006"]);
    // Its usage reported 5 of 20 prompt tokens cached: the status says so, with what the cache saved.
    const status = await stub.getStatus(TENANT);
    expect(status?.usage.cached_tokens).toBe(5);
    expect(status?.cache.hit_ratio).toBe(0.25);
    expect(status?.cache.saved_usd).toBeGreaterThan(0);
  });

  it("releases on the call journal's recordCalls, before the task's outcome", async () => {
    const { stub } = await startShared();
    const first = await pull(stub, { want: 5 });
    expect(grantedIds(first)).toEqual(["task-001"]);
    const [call] = reportAll(first, ok("a"));
    if (call === undefined) throw new Error("no report");
    await stub.recordCalls([{ taskId: call.taskId, attempt: call.attempt, calls: call.calls }]);
    expect(grantedIds(await pull(stub, { ticket: "lane-2", want: 5 }))).toEqual(["task-002", "task-003", "task-004", "task-005"]);
  });

  it("releases at its deadline when the first call never reports (a dead call does not stall the swarm): the alarm answers the waiting pull", async () => {
    const { stub } = await startShared();
    expect(grantedIds(await pull(stub, { want: 5 }))).toEqual(["task-001"]);
    const waiting = watch(pull(stub, { ticket: "lane-2", want: 5 }));
    // Calls on one stub arrive in order: once this is answered, the pull waits in the room.
    await stub.getStatus(TENANT);
    expect(waiting.done()).toBe(false);
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec("UPDATE swarm SET warmup_until = ?", Date.now() - 1);
    });
    await runAlarmNow(stub);
    expect(grantedIds(await waiting.answer)).toEqual(["task-002", "task-003", "task-004", "task-005"]);
  });

  it("a lane that runs tasks, reports, or asks for nothing is answered at once while the warm-up holds", async () => {
    const { stub } = await startShared();
    expect(grantedIds(await pull(stub, { want: 5 }))).toEqual(["task-001"]);
    const running = await pull(stub, { ticket: "lane-2", running: 1, want: 5 });
    expect(running.granted).toEqual([]);
    expect(running.retryInMs).toBe(null);
    const none = await pull(stub, { ticket: "lane-3", want: 0 });
    expect(none.granted).toEqual([]);
  });

  it("sends one lane for the warm-up task, and the lanes the window needs once it is granted (from the alarm)", async () => {
    // A window of 30 wants five header-bound lanes of 6, which a swarm without the warm-up sends at its start.
    const swarm = newSwarm(40, { concurrency: 30 });
    swarm.input.spec = { ...swarm.input.spec, system: LONG_SYSTEM };
    const { stub } = swarm;
    await stub.start(swarm.input);
    const [first, ...others] = await tickets(stub);
    expect(others).toEqual([]);
    expect(first?.slots).toBe(LANE_SLOTS);
    // Nothing more while the warm-up task waits for its lane, whatever the alarm finds.
    await runAlarmNow(stub);
    expect((await billable(stub)).queue_messages_sent).toBe(1);
    // Its lane takes it: the pull that grants it has the alarm send the other four.
    const granted = await pull(stub, { ticket: first?.id ?? "", want: LANE_SLOTS });
    expect(granted.granted.map((task) => task.warmup)).toEqual([true]);
    const sent = await waitFor(
      async () => {
        await runDurableObjectAlarm(stub);
        return (await billable(stub)).queue_messages_sent;
      },
      (n) => n >= 5,
    );
    expect(sent).toBe(5);
    expect((await tickets(stub)).map((t) => t.slots)).toEqual([LANE_SLOTS, LANE_SLOTS, LANE_SLOTS, LANE_SLOTS, LANE_SLOTS]);
  });

  it("counts its lanes for the release once the hold has lasted RELEASE_TOP_UP_MS: lanes of a prior's early headers would start the window at their gates' pace", async () => {
    // The tenant's last lanes carried 64 calls each (headers after 2 ms): one such lane covers a window of 30.
    const lanePrior = { slots: 64, latencyMs: 480, ttfbMs: 2 };
    const swarm = newSwarm(40, { concurrency: 30 });
    swarm.input.spec = { ...swarm.input.spec, system: LONG_SYSTEM };
    const { stub } = swarm;
    await stub.start({ ...swarm.input, lanePrior });
    const [first] = await tickets(stub);
    expect(first?.slots).toBe(64);
    expect(grantedIds(await pull(stub, { ticket: first?.id ?? "", want: LANE_SLOTS }))).toEqual(["task-001"]);
    // The warm-up call has had no headers for RELEASE_TOP_UP_MS: the release will start all 30 at
    // once, and a lane starts its gate's 6 before its first headers. Four more lanes of 6.
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec("UPDATE swarm SET warmup_until = ?", Date.now() + WARMUP_RELEASE_MAX_MS - RELEASE_TOP_UP_MS - 1);
    });
    await runAlarmNow(stub);
    expect((await billable(stub)).queue_messages_sent).toBe(5);
    expect((await tickets(stub)).slice(1).map((t) => t.slots)).toEqual([LANE_SLOTS, LANE_SLOTS, LANE_SLOTS, LANE_SLOTS]);
    // Once: later alarms of the hold send no more.
    await runAlarmNow(stub);
    expect((await billable(stub)).queue_messages_sent).toBe(5);
  });

  it.each<[string, LimitsInput, string]>([
    ["cache_warmup: false", { cache_warmup: false }, LONG_SYSTEM],
    ["a shared prefix under 1,024 tokens", {}, "You are a careful reviewer."],
  ])("holds nothing with %s", async (_label, limits, system) => {
    const { stub } = await startShared(limits, system);
    expect((await pull(stub, { want: 5 })).granted).toHaveLength(5);
  });
});
