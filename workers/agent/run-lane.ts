// One lane: the consumer of one ticket. It keeps its slots full by pulling from the swarm's
// SwarmRoom: when a task ends, its outcome goes back in a coalesced pull (a few ms or a few
// outcomes, whichever comes first) whose answer hands out the next tasks, so no task waits for a
// sibling and no queue round trip happens per task. It stops pulling when the room says so, or
// before its invocation's wall-time and CPU allowance, and records everything it started first.
import { toCheckpoint } from "../../src/core/agent-conversation.ts";
import {
  BASE_COALESCE_MAX_MS,
  HEDGING_SMALL_LANE_COALESCE_MAX_MS,
  HEDGING_TAIL_COALESCE_MS,
  SMALL_LANE_COALESCE_MAX_MS,
  smallLaneCoalesceMaxMs,
  TAIL_COALESCE_MS,
  type LaneTiming,
} from "../../src/core/lane-sizing.ts";
import { freesSlot, standbyTarget } from "../../src/core/standby.ts";
import { extendsRun } from "../../src/core/failure-streak.ts";
import { backoffDelayMs } from "../../src/core/retry-policy.ts";
import {
  STARTED_LIST_MS,
  type ClaimedTask,
  type PullRequest,
  type PullResponse,
  type TaskPool,
  type TaskReport,
  type TaskRunConfig,
} from "../../src/core/swarm-contract.ts";
import type { Ticket } from "../../src/core/ticket.ts";
import { parseTraceparent, type SpanContext } from "../../src/core/trace-context.ts";
import { attemptKey, type CallJournal } from "./call-journal.ts";
import type { CallStarts } from "./call-starts.ts";
import type { PermitContext } from "./call-with-permit.ts";
import type { MeasuredHeaderGate } from "./header-gate.ts";
import { runAgentTask } from "./run-agent-task.ts";
import type { BatchLineReader } from "./run-batch-line.ts";
import { startTaskTrace, type LaneTracing } from "./task-trace.ts";
import { createLaneLeases } from "./lane-leases.ts";
import { createLaneSizer } from "./lane-sizer.ts";
import { createLaneStandby } from "./lane-standby.ts";
import type { SwarmRooms } from "./swarm-rooms.ts";
import { createSwarmTools, type SwarmTools, type ToolEnvironment } from "./tools/swarm-tools.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";

/** Why a lane stopped taking tasks. */
export type LaneEnd = "swarm_done" | "idle" | "retired" | "pull_for" | "allowance" | "unreachable" | "no_swarm";

export interface LaneTally {
  pulls: number;
  pullErrors: number;
  granted: number;
  ok: number;
  failed: number;
  deferred: number;
  /** Runs that threw instead of returning a report (a bug): their leases bring the tasks back. */
  threw: number;
  /** Reports that no pull could record (the room was unreachable): their leases bring them back. */
  lost: number;
  /** Standby tasks started in the place of ended ones, and handed back unstarted. */
  promoted: number;
  released: number;
  /** Lanes that stopped, by why: the room said the swarm is done, it was idle, retired, out of time… */
  ended: Partial<Record<LaneEnd, number>>;
  /** The last lane's slots and the timing that sized them (mean time to headers and latency, ms). */
  slots: number;
  ttfbMs: number | null;
  latencyMs: number | null;
}

/** What every lane of an invocation shares: its clock, its limits and its allowance. */
export interface LaneContext {
  rooms: SwarmRooms;
  /** Permits and the gateway; the lane adds the invocation's header gate. */
  permits: Omit<PermitContext, "headerGate">;
  journal: CallJournal;
  /** Notes each call in the room before it is sent (so no call can vanish from the bill). */
  callStarts: CallStarts;
  tools: Omit<ToolEnvironment, "scratchpad">;
  /** Reads batch tasks' lines from their input files (FILES_BUCKET); absent: no batch task can run. */
  batchLines?: BatchLineReader;
  /** Tasks one lane runs at once at most (AGENT_CONCURRENCY). */
  concurrency: number;
  /**
   * The invocation's connections waiting for response headers (production: 6 per invocation,
   * shared by every lane of a queue batch; header-gate.ts), and how many it has (0 = no gate).
   */
  headerGate: MeasuredHeaderGate;
  headerSlots: number;
  /**
   * Slots the room assumed this ticket's lane has (Ticket.slots): what the lane asks for until it
   * has measured its own calls' timing. Absent: its concurrency.
   */
  assumedSlots?: number;
  /**
   * Set when `assumedSlots` comes from an earlier swarm's lanes (Ticket.latency_ms): their calls'
   * mean latency, ms. The lane runs on its gate's slots until its first headers show how early
   * they come (src/core/lane-sizing.ts, toUntimedLaneSlots).
   */
  priorLatencyMs?: number;
  /** Lanes this invocation runs (a queue batch's tickets, or 1 in an executor). */
  lanes: number;
  /**
   * The longest an ended call of the invocation waits for the pull that carries it (the room's pace
   * and the lane's coalescing): its call journal flushes no sooner (call-journal.ts).
   */
  pace: { ms: number };
  /** Durable Object requests the host spent to start this lane (PullRequest.hostRequests). */
  hostRequests?: number;
  pool: TaskPool;
  /** Epoch ms after which no lane pulls new tasks. */
  pullUntil: number;
  /** Epoch ms by which every call must be over (the invocation's wall-time limit, with margin). */
  callsEndBy: number;
  /** Tasks the invocation may still start (its CPU allowance); shared and decremented by every lane. */
  allowance: { tasks: number };
  coalesce: { ms: number; outcomes: number };
  /** A lane with nothing running waits at most this long for a retry to come due, then ends. */
  idleWaitMaxMs: number;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  tally: LaneTally;
  /** The invocation's spans; absent or null: not traced (no span is made). */
  tracing?: LaneTracing | null;
}

/**
 * How long a retiring lane's outcomes wait for company: not long, since each slot it frees is one
 * the lanes that carry the swarm are waiting for (1,000 × 200 ms, W = 100, early headers: 0.96x the
 * pool at 50 ms, 1.06x at 250 ms, for the same 0.15 DO requests a task).
 */
const RETIRING_COALESCE_MS = 50;

/** A pull and up to 3 retries, 100–800 ms apart: pulls are idempotent by (task, attempt). */
const PULL_ATTEMPTS = 4;
const PULL_BACKOFF = { baseMs: 200, capMs: 700 };

/** Returns whether the room heard from this lane at all (if not, the ticket should come again). */
export async function runLane(ticket: Ticket, ctx: LaneContext): Promise<{ reached: boolean }> {
  // What the lane opened for its tasks (the tools' MCP clients) ends with it, however it ends.
  const closers: (() => Promise<void>)[] = [];
  try {
    return await runLaneLoop(ticket, ctx, closers);
  } finally {
    await Promise.allSettled(closers.map((close) => close()));
  }
}

async function runLaneLoop(ticket: Ticket, ctx: LaneContext, closers: (() => Promise<void>)[]): Promise<{ reached: boolean }> {
  const room = ctx.rooms(ticket.swarm_id);
  const gate = ctx.headerGate;
  const tracing = ctx.tracing ?? null;
  // The swarm's root span, from the ticket, else from the room's first answer (a ticket from a room
  // that predates traces, or sent before the room had one): every span of this lane joins it.
  let swarmTrace: SpanContext | null = tracing === null ? null : parseTraceparent(ticket.traceparent);
  // Calls the grant noted that this lane started: listed in every pull until the pull carrying
  // their task's report is answered, so the room can tell a noted call that never started.
  // By attempt (`task:attempt`), each with the turns started: a pull's reports drop theirs by key.
  const startedNoted = new Map<string, { taskId: string; attempt: number; turn: number }[]>();
  /** limits.hedge: the delay the room's last answer gave (null: no backups now). */
  let hedgeAfterMs: number | null = null;
  /** Resolved when an answer first says no task is left to hand out (the swarm's tail: HedgeContext.tail). */
  let beginTail: () => void = () => {};
  const tailBegun = new Promise<void>((resolve) => {
    beginTail = resolve;
  });
  /**
   * The warm-up task's first call has its headers (ClaimedTask.warmup): `pending` until a pull that
   * says so (`warmed`) is answered. That pull goes at once: the swarm's other tasks wait for it.
   */
  const warmup = { pending: false, told: false };
  const permits: PermitContext = {
    ...ctx.permits,
    headerGate: gate,
    noteStart: (start) => ctx.callStarts.note(ticket.swarm_id, start),
    hedge: {
      afterMs: () => hedgeAfterMs,
      tail: () => tailBegun,
      // A room that cannot answer grants nothing: the call goes on alone.
      grant: (start) =>
        room.hedgeCall(start).then(
          (answer) => answer.granted,
          (error: unknown) => {
            console.error(JSON.stringify({ event: "hedge_call_failed", swarm_id: ticket.swarm_id, task_id: start.taskId, error: toErrorMessage(error) }));
            return false;
          },
        ),
    },
    onHeaders: (task, elapsedMs) => {
      sizer.callHeaders(task.taskId, elapsedMs);
      if (task.warmup !== true || warmup.pending || warmup.told) return;
      warmup.pending = true;
      poke();
    },
    onSent: () => sizer.callSent(),
    onEnded: (task) => sizer.callEnded(task.taskId),
    markStarted: (start) => {
      const key = attemptKey(start);
      const turns = startedNoted.get(key);
      if (turns === undefined) startedNoted.set(key, [start]);
      else if (!turns.some((t) => t.turn === start.turn)) turns.push(start);
    },
  };
  /** When a pull last listed every started grant-noted call (PullRequest.startedPartial). */
  let startedListedAt: number | null = null;
  /** The pull's `started`: every started grant-noted call now and then, else the reported attempts' only. */
  const startedList = (reports: readonly TaskReport[]): Pick<PullRequest, "started" | "startedPartial"> => {
    const now = ctx.now();
    if (startedListedAt === null || now - startedListedAt >= STARTED_LIST_MS || now < startedListedAt) {
      startedListedAt = now;
      return { started: [...startedNoted.values()].flat() };
    }
    return { started: reports.flatMap((report) => startedNoted.get(attemptKey(report)) ?? []), startedPartial: true };
  };
  // This lane's name and pull number: a pull sent again after an error keeps its number until one
  // is answered, so the room can give a lost answer's tasks again instead of stranding them.
  const lane = crypto.randomUUID();
  let seq = 1;
  const running = new Set<string>();
  const outbox: TaskReport[] = [];
  /** When the oldest outcome in the outbox joined it: outcomes wait for company from then, not from the loop's turn. */
  let outboxSince = 0;
  /** Its standby tasks, and those it started or hands back (lane-standby.ts). */
  const standby = createLaneStandby<TaskRunConfig>();
  /** The room lets standby tasks take ended ones' places (false while the window is over-used). */
  let transfer = true;
  /**
   * Fail fast: this lane's sub-tasks that failed in a way that may stop the swarm (extendsRun), by
   * attempt, until the room answers the pull that reports them. Meanwhile no standby task starts in
   * an ended one's place: the answer says whether the run stopped the swarm (they go back and end
   * skipped) or gives them the window's room (`run`). A success of the lane ends the run.
   */
  const runFailures = new Set<string>();
  /** Mean time from a pull's start to its answer, ms (what a freed slot would wait without standby). */
  let pullMs: number | null = null;
  /** The room's least time between this lane's pulls (PullResponse.paceMs), and when the last one left. */
  let paceMs = 0;
  let lastPullAt = 0;
  /** How long this lane has waited in a row with nothing to run (answers that gave it nothing). */
  let idleMs = 0;
  let config: TaskRunConfig | null = null;
  let tools: SwarmTools | null = null;
  let stopping = false;
  /** Stops taking tasks, saying why (the tally's `ended`, by reason). */
  const stop = (reason: LaneEnd): void => {
    if (stopping) return;
    stopping = true;
    ctx.tally.ended[reason] = (ctx.tally.ended[reason] ?? 0) + 1;
  };
  /**
   * The room said other lanes carry the swarm (PullResponse.retire): this lane takes no new task,
   * hands its standby tasks back at once (for the lanes that carry the swarm to take), and ends
   * when its running tasks have.
   */
  let retiring = false;
  /** The room said it has no task left to hand out: no free slot waits for a pull. */
  let drained = false;
  let reached = false;
  let wake: (() => void) | null = null;
  const poke = (): void => {
    // Taken first: a waiter that is not done yet sets itself again.
    const woken = wake;
    wake = null;
    woken?.();
  };
  /** What the lane carries, and when it says so (lane-sizer.ts). */
  const sizer = createLaneSizer({
    concurrency: ctx.concurrency,
    headerSlots: ctx.headerSlots,
    lanes: ctx.lanes,
    ...(ctx.assumedSlots === undefined ? {} : { assumedSlots: ctx.assumedSlots }),
    ...(ctx.priorLatencyMs === undefined ? {} : { priorLatencyMs: ctx.priorLatencyMs }),
    now: ctx.now,
    gateWaiting: () => gate.waiting(),
    running: () => running.size,
    poke,
    taking: () => !stopping && !retiring,
  });
  closers.push(async () => sizer.close());
  /** Heartbeats: the leases of the tasks it holds (lane-leases.ts). */
  const leases = createLaneLeases();
  /**
   * Until a running task ends (or newer outcomes wait) and `ready()` holds then, or `ms` pass (null:
   * no timer), or a lease is due for renewal: no wait of the lane outlasts that moment, since the
   * pull carries the renewal (a long wait for company overran it by up to its own length). One
   * timer however often it is woken: a lane's outcomes arrive one by one while it coalesces them,
   * and a timer set and cleared for each was a measurable part of its CPU.
   */
  const untilWoken = (waitMs: number | null, ready: () => boolean = () => true): Promise<void> =>
    new Promise<void>((resolve) => {
      const renewAt = leases.renewAt();
      const renewInMs = renewAt === null ? null : renewAt - ctx.now();
      const ms = waitMs === null ? renewInMs : renewInMs === null ? waitMs : Math.min(waitMs, renewInMs);
      let timer: ReturnType<typeof setTimeout> | null = null;
      const done = (): void => {
        if (timer !== null) clearTimeout(timer);
        timer = null;
        wake = null;
        resolve();
      };
      const woken = (): void => {
        if (ready()) done();
        else wake = woken;
      };
      if (ms !== null) {
        const due = ctx.now() + Math.max(0, ms);
        timer = setTimeout(
          () => {
            timer = null;
            sizer.timerLate(ctx.now() - due);
            done();
          },
          Math.max(0, ms),
        );
      }
      wake = woken;
    });
  /** Until a running task ends (or newer outcomes wait), or a lease is due for renewal. */
  const waitForWake = async (): Promise<void> => {
    await untilWoken(null);
    wake = null;
  };

  /** Every outcome waiting for a pull ended its task for good (none to retry, none deferred). */
  const outboxFreesSlots = (): boolean => outbox.every((report) => freesSlot(report.outcome));
  /**
   * What the coalescing of a small lane goes by: its slots, its running tasks, the outcomes a pull
   * waits for, whether the swarm hedges. Only while standby tasks fill its freed slots (`holding`):
   * with none in hand, a freed slot waits for the pull, so the pull goes soon.
   */
  const laneShape = (holding: boolean, runs = running.size): LaneShape | undefined =>
    holding
      ? {
          slots: sizer.capacity(),
          concurrency: ctx.concurrency,
          running: runs,
          outcomes: ctx.coalesce.outcomes,
          hedging: hedgeAfterMs !== null,
          settled: outboxFreesSlots(),
        }
      : undefined;

  /**
   * Slots a pull would fill now. Calls already queue for a header slot: the gate binds, so more
   * tasks would only wait there (holding their leases) while the room could give them to a lane
   * with room. The gate is the invocation's: a lane with nothing running still asks (the queue may
   * be another lane's).
   */
  const gateQueues = (): boolean => running.size > 0 && gate.waiting() > 0;
  /** Slots the lane has beyond the tasks it runs, whether or not its calls queue at the gate. */
  const openSlots = (): number => (stopping || retiring ? 0 : Math.max(0, Math.min(sizer.capacity() - running.size, ctx.allowance.tasks)));
  const freeSlots = (): number => (gateQueues() ? 0 : openSlots());
  /**
   * The last pull asked for nothing because calls queued at the gate, while the room still had tasks
   * to hand out. Nothing else wakes the lane for its open slots before a task ends: 2,000 calls of
   * 1 s, W = 1,000, early headers, left lanes of 128 with 32 slots open while the room held 26 tasks,
   * which ran a third round. So the gate's drain wakes it (`onceDrained`), and it pulls then.
   */
  let gateHeldBack = false;
  const roomAfterGate = (): boolean => gateHeldBack && freeSlots() > 0;
  /** One drain listener at a time: a gate whose queue stays long (the invocation's, shared) would collect one a pull. */
  let drainWatched = false;

  /**
   * Places of ended tasks that no standby task took, since the last pull left: that pull asked only
   * for the slots free when it left, so the standby tasks its answer brings take these (a lane
   * starts one only as a task of its own ends, and these have ended).
   */
  let vacant = 0;
  /** A task of this lane ended for good: the next standby task takes its slot, unless the room said not to. */
  const promoteNext = (): void => {
    if (stopping || !transfer || runFailures.size > 0 || ctx.allowance.tasks <= 0 || ctx.now() >= ctx.pullUntil) return;
    const next = standby.promoteNext(ctx.now());
    if (next === undefined) {
      vacant += 1;
      return;
    }
    ctx.tally.promoted += 1;
    start(next.task, next.run);
  };
  /** Every standby task goes back unstarted with the next pull (the lane stops, or the swarm does). */
  const releaseStandby = (): void => {
    for (const task of standby.releaseAll()) {
      leases.drop(task.taskId);
      ctx.tally.released += 1;
    }
  };

  const start = (task: ClaimedTask, run: TaskRunConfig): void => {
    if (tools === null) {
      // One set of tools per lane: its MCP clients serve every task the lane runs, never one per task.
      tools = createSwarmTools(run.tools, run.httpAllowlist, run.tenant, { ...ctx.tools, scratchpad: (request) => room.scratchpad(request) }, run.mcpServers);
      closers.push(tools.close);
    }
    const taskTools = tools;
    running.add(task.taskId);
    // A standby task's lease was renewed while it waited: keep the newer end.
    if (!leases.holds(task)) leases.hold(task);
    ctx.allowance.tasks -= 1;
    ctx.tally.granted += 1;
    const trace = tracing !== null && swarmTrace?.sampled === true ? startTaskTrace(tracing, swarmTrace, run.swarmId, task, ctx.now()) : undefined;
    void runAgentTask(run, task, {
      // A call waits for a header slot only until its latest start (callWithPermit): started later,
      // it could still run while the room hands the task to another lane.
      permits,
      tools: taskTools,
      // Each call is journaled the moment it ends: a crash before the next pull loses no usage the
      // upstream billed (the pull carries it again; rows are deduped by call id).
      onCall: (record) => ctx.journal.append(run.swarmId, { taskId: task.taskId, attempt: task.attempt, calls: [record] }),
      onCheckpoint: (state) => ctx.journal.checkpoint(run.swarmId, task.taskId, task.attempt, toCheckpoint(state)),
      callsEndBy: Math.min(ctx.callsEndBy, task.runUntil),
      now: ctx.now,
      ...(ctx.batchLines === undefined ? {} : { batchLines: ctx.batchLines }),
      ...(trace === undefined ? {} : { trace }),
    })
      .then(
        (report) => {
          trace?.end(report, ctx.now());
          countOutcome(ctx.tally, report);
          for (const call of report.calls) sizer.timed(call.ttfbMs ?? null, call.latencyMs);
          if (outbox.length === 0) outboxSince = ctx.now();
          outbox.push(report);
          if (task.kind === "task" && extendsRun(report.outcome)) runFailures.add(attemptKey(report));
          else if (report.outcome.kind === "succeeded") runFailures.clear();
          if (freesSlot(report.outcome)) promoteNext();
        },
        (error: unknown) => {
          // Its outcome is unknown, so it is not recorded: its lease brings the task back, resuming
          // after its last journaled turn.
          ctx.tally.threw += 1;
          console.error(
            JSON.stringify({ event: "task_run_threw", swarm_id: run.swarmId, task_id: task.taskId, attempt: task.attempt, error: toErrorMessage(error) }),
          );
        },
      )
      .finally(() => {
        running.delete(task.taskId);
        sizer.callEnded(task.taskId);
        leases.drop(task.taskId);
        poke();
      });
  };

  for (;;) {
    if (!stopping && (ctx.now() >= ctx.pullUntil || ctx.allowance.tasks <= 0)) stop(ctx.now() >= ctx.pullUntil ? "pull_for" : "allowance");
    if (retiring && running.size === 0 && standby.size() === 0) stop("retired");
    const final = stopping && running.size === 0;
    const free = freeSlots();
    const heldBack = gateQueues() && openSlots() > 0;
    const reports = outbox.splice(0);
    if (stopping) releaseStandby();
    const renew = leases.due(ctx.now());
    const { latencyMs } = sizer.timing();
    // Standby tasks count against the invocation's allowance as the tasks they will be.
    const wantStandby =
      stopping || retiring
        ? 0
        : Math.max(
            0,
            Math.min(
              ctx.allowance.tasks - free - standby.size(),
              standbyTarget({
                concurrency: ctx.concurrency,
                // What the lane carries: a header-bound lane of 6 holds standby for its 6, not for its concurrency.
                slots: sizer.capacity(),
                // What it will run once this pull's free slots are filled: a small lane whose tasks
                // all ended while it waited still needs standby tasks for the ones it gets now.
                running: running.size + free,
                latencyMs,
                // The refill they cover: the pull's round trip and how long the lane's outcomes will
                // wait for company once it holds them and runs what this pull fills (a small lane's
                // wait is long, and only while it holds standby tasks: counted as it is with none in
                // hand, the target fell short of it and the lane ran dry before every pull).
                refillMs: pullMs === null ? null : pullMs + Math.max(paceMs, coalesceMs(ctx.coalesce.ms, latencyMs, laneShape(true, running.size + free))),
              }) - standby.size(),
            ),
          );
    const request: PullRequest = {
      ticket: ticket.ticket,
      lane,
      seq,
      reports,
      want: free,
      // A lane that stops taking tasks carries only what it runs and holds: the room counts its
      // ticket for those, so it neither sends a lane for them nor counts on this one for more.
      slots: stopping || retiring ? running.size + standby.size() : sizer.reportedSlots(),
      ...(stopping || retiring ? { draining: true } : {}),
      ...measuredTiming(sizer.timing()),
      ...(seq === 1 && ctx.hostRequests !== undefined ? { hostRequests: ctx.hostRequests } : {}),
      ...(warmup.pending ? { warmed: true } : {}),
      ...sizer.untoldFirstHeaders(),
      final,
      pool: ctx.pool,
      endBy: ctx.callsEndBy,
      ...(renew === undefined ? {} : { renew }),
      ...startedList(reports),
      sentAt: ctx.now(),
      ...(wantStandby > 0 ? { standby: wantStandby } : {}),
      ...(running.size > 0 ? { running: running.size } : {}),
      ...standby.pullFields(),
    };
    const pullStarted = ctx.now();
    lastPullAt = pullStarted;
    vacant = 0;
    const answer = await pullWithRetry(room, ticket.swarm_id, request, ctx);
    ctx.tally.slots = request.slots;
    sizer.told(request.slots);
    ({ ttfbMs: ctx.tally.ttfbMs, latencyMs: ctx.tally.latencyMs } = sizer.timing());
    if (answer === null) {
      // The room is unreachable: stop taking work. Its outcomes go again with the next pull (they
      // are recorded idempotently), made when a running task ends; with nothing left running and
      // nothing newer to send, they are left to the leases.
      stop("unreachable");
      const nothingNewer = outbox.length === 0;
      outbox.unshift(...reports);
      if (running.size === 0 && nothingNewer) {
        ctx.tally.lost += outbox.length;
        return { reached };
      }
      // Not again at once: when a running task ends (unless newer outcomes are already waiting), or
      // when a lease must be renewed (the pull then tries the room again).
      if (nothingNewer) await waitForWake();
    } else {
      reached = true;
      seq += 1;
      if (tracing !== null && swarmTrace === null) swarmTrace = parseTraceparent(answer.traceparent);
      const took = ctx.now() - pullStarted;
      pullMs = pullMs === null ? took : pullMs + 0.2 * (took - pullMs);
      standby.answered(request);
      if (request.warmed === true) Object.assign(warmup, { pending: false, told: true });
      // The room has these reports: their tasks' noted calls need listing no more.
      for (const report of reports) {
        startedNoted.delete(attemptKey(report));
        runFailures.delete(attemptKey(report));
      }
      if (final) return { reached };
      leases.setLeaseMs(answer.leaseMs);
      // Not renewed: the task is no longer this attempt's (it was handed out again). Its call runs
      // on and its outcome is still reported (a success is kept), but it needs no more heartbeats.
      // A standby task not renewed is not this lane's to start any more.
      for (const taskId of leases.renewed(request.renew, answer.renewed)) standby.take(taskId);
      transfer = answer.transfer ?? true;
      paceMs = answer.paceMs ?? 0;
      hedgeAfterMs = answer.hedgeAfterMs ?? null;
      // Other lanes cover what the swarm can run: this one ends once its tasks have, so a swarm runs
      // on as few lanes as carry its window.
      const retired = answer.retire === true && !retiring;
      if (retired) retiring = true;
      if (answer.config === null) stop("no_swarm");
      else config = answer.config;
      // Held standby tasks the window now has room for start at once.
      for (const { taskId } of answer.run ?? []) {
        const next = standby.take(taskId);
        if (next !== undefined) start(next.task, next.run);
      }
      if (config !== null) {
        for (const task of answer.granted) {
          if (task.standby === true) {
            standby.hold({ task, run: config });
            leases.hold(task);
          } else start(task, config);
        }
      }
      // Places that ended while the pull was on its way, with no standby task then: a header-bound
      // round's calls end within a few ms of each other, and the pull that the first empty slot sent
      // left before the others had ended.
      while (vacant > 0 && standby.size() > 0 && freeSlots() > 0) {
        vacant -= 1;
        promoteNext();
      }
      // The window or the tasks ran out: more slots would get nothing until tasks end, whose pull
      // asks anyway. (Held standby tasks the window took count towards what the pull asked for.)
      // Nothing left to hand out is not short while the lane holds standby tasks and the window took
      // all it asked: the pulls it grows by run them (`run`). The room grants a growing lane standby
      // tasks while the window has room (the other lanes report no free slot until they grow too);
      // stopped there, they waited a whole call: 1,000 calls of 3 s, W = 1,000, early headers, a
      // first swarm: 976 in flight until the first calls ended, the last 24 a call later (6.4 s, not 4.2 s).
      const windowed = answer.granted.filter((task) => task.standby !== true).length + (answer.run?.length ?? 0);
      const short = windowed < request.want || (answer.waiting === 0 && standby.size() === 0);
      sizer.answered({ grantedShort: short, toldFirstHeaders: request.firstHeadersMs !== undefined, gateBound: answer.gateBound === true });
      // The swarm hands out nothing more and may not transfer (it ended, was cancelled or is blocked),
      // or nothing of this lane runs to make room and the window has none: what waits in standby
      // goes back, for lanes whose tasks end to take. A retired lane's standby tasks go back too,
      // with a pull made at once: run here, they would wait for this lane's few tasks to end one by
      // one while the lanes that carry the swarm had room (1,000 × 200 ms, W = 100, early headers:
      // a retired lane ran its last standby tasks 10 at a time, 0.3 s after the other had finished).
      if (retired || (answer.stop && !transfer) || (running.size === 0 && standby.size() > 0)) releaseStandby();
      drained = answer.waiting === 0;
      if (drained) beginTail();
      gateHeldBack = heldBack && (answer.waiting ?? 0) > 0 && !answer.stop;
      if (gateHeldBack && !drainWatched) {
        drainWatched = true;
        gate.onceDrained(() => {
          drainWatched = false;
          if (roomAfterGate()) poke();
        });
      }
      if (answer.granted.length === 0 && running.size === 0 && outbox.length === 0 && standby.size() === 0 && standby.releasing() === 0) {
        const waitMs = answer.retryInMs;
        // Idle waits add up (a full window answers "soon" again and again): at most idleWaitMaxMs in a row.
        if (answer.stop || waitMs === null || idleMs + waitMs > ctx.idleWaitMaxMs || ctx.now() + waitMs >= ctx.pullUntil) {
          stop(answer.stop ? "swarm_done" : "idle");
          // The room closed this lane with its answer: no final pull.
          if (answer.closed === true) return { reached };
          continue;
        }
        idleMs += waitMs;
        await ctx.sleep(waitMs);
        continue;
      }
      idleMs = 0;
      // A `stop` while this lane still runs tasks is not final: one of them may fail and be retried,
      // and this lane, with free slots, is the one to run it (its next pull asks again).
      // Free slots a retry will fill soon: pull again when it is due, even if no task ends first.
      // (A late wake only makes one extra pull.)
      if (!stopping && answer.granted.length < free && answer.retryInMs !== null && answer.retryInMs <= ctx.idleWaitMaxMs) {
        setTimeout(poke, answer.retryInMs);
      }
    }
    if (outbox.length === 0 && running.size > 0 && !warmup.pending && !(retiring && standby.releasing() > 0)) {
      if (!roomAfterGate()) await waitForWake();
      // Woken to renew leases, to say the warm-up call has its headers or to fill the slots the
      // gate's queue held back, with nothing to report: the pull goes now.
      if (outbox.length === 0) continue;
    }
    // Outcomes wait for company, counted from the oldest of them: the journal times its flush of
    // their calls from then too (plus a margin), so the pull that carries them leaves first. With
    // nothing left to hand out (a swarm's tail) they wait longer: no free slot waits for the pull,
    // and the tail's calls, ending one by one, share pulls; but a task to retry does not wait, and
    // a lane's last outcome never does (coalesce). A paced lane pulls no sooner than the room asked
    // (its standby tasks cover the wait).
    const tail = drained || stopping;
    // A failure that may trip fail fast holds this lane's standby tasks until the room has it (or
    // the warm-up call's headers hold the swarm's tasks): those go at once.
    const urgent = (runFailures.size > 0 && standby.size() > 0) || warmup.pending;
    const company = urgent
      ? ctx.coalesce.ms
      : retiring
        ? Math.max(ctx.coalesce.ms, RETIRING_COALESCE_MS)
        : tail
          ? Math.max(ctx.coalesce.ms, outboxFreesSlots() ? (hedgeAfterMs === null ? TAIL_COALESCE_MS : HEDGING_TAIL_COALESCE_MS) : 0)
          : coalesceMs(ctx.coalesce.ms, sizer.timing().latencyMs, laneShape(standby.size() > 0));
    const paced = (): number => (tail ? 0 : Math.max(0, paceMs - (ctx.now() - lastPullAt)));
    ctx.pace.ms = Math.max(paceMs, company);
    // A small lane's long wait for company holds only while it has standby tasks to take the slots
    // its calls free: once none is left, the wait is that of a lane holding none (counted from the
    // same oldest outcome), since the next slot to free would wait for the pull. Header-bound
    // lognormal 300/1500, W = 100: a round's calls end together at the headers' 484 ms, a lane's 3
    // standby tasks took 3 of its 6 freed slots, and the other 3 stood empty for 500–700 ms, until
    // the promoted calls had ended too (the second round's slots waited 295 ms on average for a
    // refill). Not only once a slot is empty: a lane of 6 whose first grant's 6 standby tasks took
    // its first round's slots pulled again only when its second round ended, and those slots
    // waited for that pull (1,000 × 200 ms, W = 100, headers with the answer).
    // A wait past SMALL_LANE_COALESCE_MAX_MS (a lane of long calls) holds only while every outcome
    // in it frees its slot: a task to retry, or a deferral, ends it as a lane holding no standby's
    // would end (the room hears of a 429 no later than from a lane of short calls).
    const dryCompany = tail || urgent || retiring ? company : coalesceMs(ctx.coalesce.ms, sizer.timing().latencyMs);
    const long = company > SMALL_LANE_COALESCE_MAX_MS;
    const dry = dryCompany < company ? () => standby.size() === 0 || (long && !outboxFreesSlots()) : undefined;
    /** What is left of a wait of `ms` for company, counted from the oldest outcome (and no sooner than the pace). */
    const leftOf = (ms: number): number => Math.max(paced(), ms - (ctx.now() - outboxSince));
    await coalesce(outbox, running, ctx, leftOf(company), untilWoken, dry);
    if (dry?.() === true) await coalesce(outbox, running, ctx, leftOf(dryCompany), untilWoken);
  }
}

/**
 * How long outcomes wait for company: the setting, or 10% of the mean call latency when that is
 * longer (at most BASE_COALESCE_MAX_MS). A freed slot does not wait for it: a standby task takes the slot at once
 * (src/core/standby.ts), and standbyTarget counts this wait in the refill it covers. What waits is
 * the room's view of the outcomes. Fewer, fuller pulls cost both workerds less (each pull crosses
 * from the agent's to the orchestrator's locally): at 3,000 × 200 ms, W = 100, 0.068 pulls a task
 * instead of 0.10–0.11 with 5% and 16 outcomes, and 0.12–0.19 ms less CPU a task, the same wall.
 */
export function coalesceMs(settingMs: number, meanLatencyMs: number | null, lane?: LaneShape): number {
  if (settingMs <= 0) return settingMs;
  const base = Math.max(settingMs, Math.min(BASE_COALESCE_MAX_MS, Math.round((meanLatencyMs ?? 0) * 0.1)));
  // What the lane carries: its slots, or fewer when the room spreads the window over more lanes
  // (the first lanes, before timing shows that headers come early).
  if (lane === undefined || meanLatencyMs === null || lane.running <= 0) return base;
  const carried = Math.min(lane.slots, lane.running);
  if (carried >= Math.min(lane.outcomes, lane.concurrency)) return base;
  // A small lane (a header-bound executor carries 6 calls) would send a pull for every outcome or
  // two: it waits for about two carried tasks' worth of outcomes, at most
  // SMALL_LANE_COALESCE_MAX_MS, or one mean call up to LONG_CALL_COALESCE_MAX_MS when its calls are
  // longer and every outcome waiting frees its slot (smallLaneCoalesceMaxMs);
  // HEDGING_SMALL_LANE_COALESCE_MAX_MS while the swarm hedges. Its standby tasks take the freed
  // slots meanwhile.
  const target = Math.min(lane.outcomes, 2 * carried);
  const most =
    lane.hedging === true ? HEDGING_SMALL_LANE_COALESCE_MAX_MS : lane.settled === false ? SMALL_LANE_COALESCE_MAX_MS : smallLaneCoalesceMaxMs(meanLatencyMs);
  return Math.round(Math.max(base, Math.min(most, (target * meanLatencyMs) / lane.running)));
}

/**
 * A lane's size, for coalesceMs: slots it carries (of its concurrency), tasks running, the outcomes
 * a full pull holds, and whether the swarm hedges (absent: it does not).
 */
export interface LaneShape {
  slots: number;
  concurrency: number;
  running: number;
  outcomes: number;
  hedging?: boolean;
  /** Every outcome waiting frees its slot (none to retry, none deferred); absent: it does. */
  settled?: boolean;
}

/**
 * Lets a few more outcomes join the first: until `outcomes` are waiting, `ms` passed, nothing runs,
 * or `cutShort()` holds.
 */
async function coalesce(
  outbox: readonly TaskReport[],
  running: ReadonlySet<string>,
  ctx: LaneContext,
  ms: number,
  untilWoken: (ms: number, ready: () => boolean) => Promise<void>,
  cutShort: () => boolean = () => false,
): Promise<void> {
  if (outbox.length === 0 || running.size === 0) return;
  const enough = (): boolean => outbox.length >= ctx.coalesce.outcomes || running.size === 0 || cutShort();
  if (enough() || ms <= 0) return;
  await untilWoken(ms, enough);
}

async function pullWithRetry(room: ReturnType<SwarmRooms>, swarmId: string, request: PullRequest, ctx: LaneContext): Promise<PullResponse | null> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      ctx.tally.pulls += 1;
      // The journal holds these calls back while the pull carries them, and takes them back if it fails.
      return await ctx.journal.carry(swarmId, request.reports, () => room.pull(request));
    } catch (error) {
      ctx.tally.pullErrors += 1;
      console.error(JSON.stringify({ event: "swarm_room_rpc_failed", rpc: "pull", swarm_id: swarmId, attempt, error: toErrorMessage(error) }));
      if (attempt >= PULL_ATTEMPTS) return null;
      await ctx.sleep(100 + backoffDelayMs(attempt, null, PULL_BACKOFF));
    }
  }
}

/** The lane's timing for its pull, once it has timed a call. */
function measuredTiming(timing: LaneTiming): Pick<PullRequest, "timing"> {
  return timing.ttfbMs === null || timing.latencyMs === null
    ? {}
    : { timing: { ttfbMs: Math.round(timing.ttfbMs * 10) / 10, latencyMs: Math.round(timing.latencyMs * 10) / 10 } };
}

function countOutcome(tally: LaneTally, report: TaskReport): void {
  if (report.outcome.kind === "succeeded") tally.ok += 1;
  else if (report.outcome.kind === "deferred") tally.deferred += 1;
  else tally.failed += 1;
}
