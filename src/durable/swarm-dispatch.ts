// Dispatch and the window: what a pull records (outcomes, retries, the retry budget) and grants
// (due retries, then pending tasks while the window has room, each leased with its budget reserved
// and its model picked), how the adaptive window moves, and the tickets that bring lanes
// (SwarmTickets owns their table) — and when the alarm must next send some. It awaits nothing on
// an agent's path: tickets are sent from start and the alarm only.
import { adjustWindow, defaultRetryBudget } from "../core/adaptive-window.ts";
import { fitsBudget, toBudgetReason, type Amount } from "../core/budget.ts";
import type { RoomSettings } from "../core/env-settings.ts";
import { estimatePromptTokens } from "../core/estimate-swarm.ts";
import { isSurplusLane, retireMargin, toGrantedRoom } from "../core/lane-sizing.ts";
import { areCallsEven, EVEN_CALLS_MIN_SAMPLES, STANDBY_MAX, STANDBY_SLOTS_SHARE, standbyPastRoom, standbyShare, tailStandbyRoom } from "../core/standby.ts";
import { backoffDelayMs, toQueueDelaySeconds } from "../core/retry-policy.ts";
import type { Limits } from "../core/spec-schema.ts";
import { IN_FLIGHT_TASK_STATES, type CallStart, type ClaimedTask, type TaskAction, type TaskPool, type TaskReport } from "../core/swarm-contract.ts";
import { decideGrant, decideRecord } from "../core/task-transitions.ts";
import { toSendBatches, type Ticket } from "../core/ticket.ts";
import type { TaskEnd } from "../core/failure-streak.ts";
import type { SwarmBudget } from "./swarm-budget.ts";
import type { SwarmFailFast } from "./swarm-fail-fast.ts";
import type { SwarmWarmup } from "./swarm-warmup.ts";
import { PRE_NOTE_MS, type SwarmLedger } from "./swarm-ledger.ts";
import type { SwarmMeters } from "./swarm-meters.ts";
import { CheckpointSchema, OverrideSchema, TASK_COLUMNS, type SwarmRow, type TaskRow } from "./swarm-room-rows.ts";
import type { SwarmRouting } from "./swarm-routing.ts";
import { toLifeRow, type SwarmStore } from "./swarm-store.ts";
import type { SwarmTasks } from "./swarm-tasks.ts";
import type { SwarmTickets } from "./swarm-tickets.ts";
import type { SwarmTotals } from "./swarm-totals.ts";
import { toErrorMessage } from "../core/error-message.ts";
import { toCallId } from "../core/ids.ts";

/** The newest finished calls the room judges evenness on (tailStandbyRoom), and how often it looks again. */
const EVEN_CALLS_SAMPLE = 200;
const EVEN_CALLS_REFRESH_MS = 500;

/**
 * A pull's answer crosses an RPC boundary (32 MiB limit): past this many characters of prompts and checkpoints the
 * remaining tasks are deferred to a redelivery instead of granted.
 */
const CLAIM_MAX_PROMPT_CHARS = 8_000_000;

/** Per model call: `long_timeout_s` for a task flagged long, else `timeout_s`. */
const toCallTimeoutS = (task: { long: number } | null, limits: Limits): number => (task?.long === 1 ? limits.long_timeout_s : limits.timeout_s);

/** After a failed ticket send, the next try waits this long. */
const SEND_RETRY_MS = 1_000;

/** What dispatch works with: the room's SQL, its other modules, its lease settings and its queues. */
export interface DispatchParts {
  sql: SqlStorage;
  store: SwarmStore;
  totals: SwarmTotals;
  tickets: SwarmTickets;
  routing: SwarmRouting;
  budget: SwarmBudget;
  tasks: SwarmTasks;
  ledger: SwarmLedger;
  meters: SwarmMeters;
  failFast: SwarmFailFast;
  warmup: SwarmWarmup;
  leases: Pick<RoomSettings, "leaseMs" | "leaseGraceMs" | "toolTurnLeaseMs">;
  /** The short pool's queue, and the long-chain pool's (the short one when unbound). */
  queues: { short: Queue; long: Queue };
  /** The swarm's traceparent, which each ticket carries when the swarm is traced. */
  trace: { traceparent(): string | undefined };
}

/** What a lane that names itself brings to a grant besides its want: what it runs and holds, and the standby tasks it asks for. */
export interface LaneAsk {
  /** The lane (PullRequest.lane): its grants are noted under it. */
  id: string;
  /** Its ticket (PullRequest.ticket): the other tickets' lanes are the ones that could run what it is not given. */
  ticket: string;
  /** Standby tasks it asks for (PullRequest.standby). */
  standby: number;
  /** Tasks it runs, those of its standby tasks that just entered the window included. */
  running: number;
  /** Standby tasks it still holds. */
  held: number;
}

export class SwarmDispatch {
  private readonly sql: SqlStorage;
  private readonly store: SwarmStore;
  private readonly totals: SwarmTotals;
  private readonly tickets: SwarmTickets;
  private readonly routing: SwarmRouting;
  private readonly budget: SwarmBudget;
  private readonly tasks: SwarmTasks;
  private readonly ledger: SwarmLedger;
  private readonly meters: SwarmMeters;
  private readonly failFast: SwarmFailFast;
  private readonly warmup: SwarmWarmup;
  private readonly leases: DispatchParts["leases"];
  private readonly queues: DispatchParts["queues"];
  private readonly trace: DispatchParts["trace"];
  /** When a failed ticket send is tried again; null when the last send went through. */
  private sendRetryAt: number | null = null;
  /** Whether any task is flagged long (its own pool of tickets); null = not looked yet. */
  private hasLongTasks: boolean | null = null;

  constructor(parts: DispatchParts) {
    this.sql = parts.sql;
    this.store = parts.store;
    this.totals = parts.totals;
    this.tickets = parts.tickets;
    this.routing = parts.routing;
    this.budget = parts.budget;
    this.tasks = parts.tasks;
    this.ledger = parts.ledger;
    this.meters = parts.meters;
    this.failFast = parts.failFast;
    this.warmup = parts.warmup;
    this.leases = parts.leases;
    this.queues = parts.queues;
    this.trace = parts.trace;
  }

  /** Whether the swarm's newest finished calls are even (areCallsEven), read again at most every EVEN_CALLS_REFRESH_MS. */
  private evenCalls: { at: number; even: boolean } | null = null;
  private callsEven(now: number): boolean {
    const cached = this.evenCalls;
    if (cached !== null && now >= cached.at && now - cached.at < EVEN_CALLS_REFRESH_MS) return cached.even;
    const latencies = this.sql
      .exec<{ ms: number }>("SELECT latency_ms AS ms FROM calls WHERE status != 'unknown' AND hedge = 0 ORDER BY rowid DESC LIMIT ?", EVEN_CALLS_SAMPLE)
      .toArray()
      .map((row) => row.ms);
    const even = areCallsEven(latencies);
    // Too few calls to judge are read again on the next pull: a round's ends come in pulls a few ms apart.
    if (latencies.length >= EVEN_CALLS_MIN_SAMPLES) this.evenCalls = { at: now, even };
    return even;
  }

  /**
   * Up to `want` tasks of the pool, due retries first (they hold their place in the window), then
   * pending tasks while the window has room, then — once the window is full — up to `lane.standby`
   * pending tasks as standby (leased outside the window: src/core/standby.ts), if the lane runs
   * tasks (`lane.running`) or this grant gives it some.
   * Each is leased as its next attempt, with its budget reserved. `blocked`: nothing can be granted
   * until something changes (every circuit open, the budget waiting for reservations to settle, or
   * no task fits the lane's remaining time).
   */
  grantTasks(
    swarm: SwarmRow,
    want: number,
    now: number,
    pool: TaskPool,
    endBy: number | null,
    lane?: LaneAsk,
  ): { granted: ClaimedTask[]; ended: boolean; blocked: boolean } {
    const result = { granted: [] as ClaimedTask[], ended: false, blocked: false };
    if (swarm.finished_at !== null || (swarm.state !== "running" && swarm.state !== "planning" && swarm.state !== "reducing")) return result;
    const config = this.store.toRunConfig(swarm);
    const long = pool === "long" ? 1 : 0;
    const limit = Math.min(want, 1_000);
    // Standby tasks go to a lane that names itself (it reports what it starts in their place), and
    // no lane holds more than its share of what is not started yet (standbyShare).
    const waiting = this.totals.waiting();
    const laneRunning = lane?.running ?? 0;
    const share = lane === undefined ? 0 : standbyShare({ waiting, held: this.totals.standby(), laneHeld: lane.held, openLanes: this.tickets.openCount() });
    const standbyLimit = lane === undefined ? 0 : Math.max(0, Math.min(lane.standby, STANDBY_MAX, share));
    const candidates = this.sql
      .exec<TaskRow & { size: number }>(
        `SELECT ${TASK_COLUMNS}, LENGTH(prompt) + COALESCE(LENGTH(checkpoint), 0) AS size FROM tasks
         WHERE state IN ('retry_wait', 'dispatched') AND COALESCE(retry_at, 0) <= ? AND long = ? ORDER BY retry_at, seq LIMIT ?`,
        now,
        long,
        limit,
      )
      .toArray();
    const retries = candidates.length;
    // Prompt-cache warm-up: one task first, the rest once its first call's headers arrive (SwarmWarmup).
    const warmupCap = this.warmup.grantCap(swarm, now);
    // Fail fast: a run of failures near the limit is given no more than it lacks (SwarmFailFast).
    const cap = minCap(warmupCap, this.failFast.inFlightCap(swarm));
    const room = (cap === null ? swarm.window : Math.min(swarm.window, cap)) - this.totals.inFlight();
    // Pending tasks past the window's room (or past `want`) are the standby ones. Past what its gate
    // starts within the fill time, a lane takes only what the other lanes have no slots for (toGrantedRoom).
    const asked = Math.max(0, Math.min(limit - candidates.length, room));
    const fillSlots = lane === undefined ? asked : this.tickets.fillSlotsOf(asked);
    const windowed =
      lane === undefined || asked <= fillSlots
        ? asked
        : toGrantedRoom({ asked, fillSlots, pending: waiting - retries, freeElsewhere: this.freeSlotsElsewhere(swarm, lane.ticket, pool, now) });
    // Only once the window is full, or a lane running tasks gets all it asked for (not over the
    // window: a window that shrank drains first), and only to a lane that will run something. Many
    // small lanes (a header-bound swarm's executors) each get their want while the window still has
    // room that others' ended tasks left until their own pulls, or that lanes on their way will take:
    // they need standby tasks all the same, from their first pull on once the swarm is gate-bound
    // (its tasks end together, and with none in hand a lane of 6 refilled its first round's slots
    // one pull later: 1,000 × 200 ms, W = 100, headers with the answer). A lane whose headers come
    // early pulls again as soon as they do, to grow. Never a task another lane could run now:
    // standbyPastRoom below.
    const wantMet = (laneRunning > 0 || (windowed > 0 && this.tickets.isGateBound())) && windowed >= limit - retries;
    // What the lane will run: a lane starts its standby tasks only in the places of its own tasks
    // as they end, so it holds at most STANDBY_SLOTS_SHARE times that. It asks for what it would
    // run had it got its `want`: a lane of 128 slots running 6 of a full window asked for 64 and
    // ran them 6 at a time, the swarm's last tasks among them.
    const laneRuns = laneRunning + retries + windowed;
    const left = waiting - retries - windowed;
    const shareCap = cap !== null || (windowed < room && !wantMet) || room < 0 || laneRuns <= 0 ? 0 : Math.min(standbyLimit, STANDBY_SLOTS_SHARE * laneRuns);
    // Never a task another lane could run now (standbyPastRoom): the window's room, as far as the
    // other lanes have slots free for it.
    const shareRoom =
      shareCap > 0 && lane !== undefined && windowed < room
        ? Math.min(shareCap, standbyPastRoom({ pending: left, freeRoom: Math.min(room - windowed, this.freeSlotsElsewhere(swarm, lane.ticket, pool, now)) }))
        : shareCap;
    // With even calls, the last window stays in the room, for the lanes whose slots free first, and
    // a lane gets no more standby than one round of what it runs (tailStandbyRoom over what waits
    // once this grant's own tasks are out). The calls are read only where that bound could bind:
    // within two windows of the swarm's end.
    const nearTheEnd = shareRoom > 0 && left - swarm.window < Math.max(shareRoom, swarm.window);
    const standbyRoom = nearTheEnd
      ? Math.min(shareRoom, tailStandbyRoom({ waiting: left, window: swarm.window, laneRuns, evenCalls: this.callsEven(now) }))
      : shareRoom;
    if (windowed + standbyRoom > 0) {
      candidates.push(
        ...this.sql
          .exec<TaskRow & { size: number }>(
            `SELECT ${TASK_COLUMNS}, LENGTH(prompt) + COALESCE(LENGTH(checkpoint), 0) AS size FROM tasks
             WHERE state = 'pending' AND long = ? ORDER BY seq LIMIT ?`,
            long,
            windowed + standbyRoom,
          )
          .toArray(),
      );
    }
    /** Candidates from this index on are standby (the due retries and the window's share come first). */
    const firstStandby = retries + windowed;
    const budget = this.store.budget(swarm);
    // The grant notes each attempt's first call itself (a lane starts it at once, as a rule), all in
    // one statement after the loop: only a lane that names itself can list what it started, so only
    // its grants are noted (SwarmLedger.preNote).
    const notes: { start: CallStart; until: number }[] = [];
    let promptChars = 0;
    let windowGrants = 0;
    for (const [index, task] of candidates.entries()) {
      const asStandby = index >= firstStandby;
      const decision = decideGrant({ ...toLifeRow(task), retryAt: task.retry_at }, now, this.store.attemptsAllowed(task, config.limits.max_attempts));
      if (decision.kind === "skip") continue;
      if (decision.kind === "fail") {
        this.tasks.endTask(task, "failed", now, { errorClass: decision.errorClass, message: decision.message });
        result.ended = true;
        continue;
      }
      // A grant's answer crosses an RPC boundary (32 MiB): the rest waits for the next pull.
      if (result.granted.length > 0 && promptChars + task.size > CLAIM_MAX_PROMPT_CHARS) break;
      const model = this.routing.pickModel(swarm, now, { probe: true, taskId: task.id, hint: task.model_hint });
      if (model === null) {
        // Every circuit is open: nothing runs until one half-opens (the alarm issues tickets then).
        result.blocked = true;
        break;
      }
      const timeoutS = toCallTimeoutS(task, config.limits);
      // A sub-agent's lease covers every turn of its loop, each with its tool calls.
      const turns = task.kind === "task" ? this.store.callsPerTask(swarm) : 1;
      const toolMs = task.kind === "task" && config.tools.length > 0 ? this.leases.toolTurnLeaseMs : 0;
      const runMs = turns * (timeoutS * 1_000 + toolMs);
      if (endBy !== null && now + runMs > endBy) {
        // The lane must end before this task could: another lane (a fresh ticket) takes it.
        result.blocked = true;
        break;
      }
      let reservation: Amount = { usd: 0, tokens: 0 };
      if (budget !== null) {
        const worst = this.budget.worstCase(swarm, task, model);
        const others = this.budget.committedExcept(task);
        if (!fitsBudget(budget, others, worst)) {
          if (others.usd > this.totals.charged().usd || others.tokens > this.totals.charged().tokens) {
            // Others' reservations may settle below their worst case: this task waits for them.
            result.blocked = true;
          } else {
            this.budget.exhaustBudget(toBudgetReason(budget, this.totals.charged(), worst), now, task.id);
            result.ended = true;
          }
          break;
        }
        reservation = worst;
      }
      promptChars += task.size;
      // The hard bound covers every call the task may make; the lease is short and renewed by its
      // lane's heartbeats while they run, so a lane that dies gives its tasks back in seconds.
      const runUntil = now + runMs + this.leases.leaseGraceMs;
      const leaseUntil = Math.min(runUntil, now + this.leases.leaseMs);
      const row = this.sql
        .exec<{ prompt: string; checkpoint: string | null; override: string | null }>(
          `UPDATE tasks SET state = 'running', attempts = ?, deadline = ?, run_until = ?, retry_at = NULL, model = ?, reserved_usd = ?,
             reserved_tokens = ?, standby = ?, started_at = COALESCE(started_at, ?) WHERE id = ? RETURNING prompt, checkpoint, override`,
          decision.attempt,
          leaseUntil,
          runUntil,
          model,
          reservation.usd,
          reservation.tokens,
          asStandby ? 1 : 0,
          now,
          task.id,
        )
        .one();
      this.totals.move(task.kind, task.state, "running");
      if (asStandby) this.totals.standbyMoved(1);
      else windowGrants += 1;
      const held = IN_FLIGHT_TASK_STATES.includes(task.state) ? { usd: task.reserved_usd, tokens: task.reserved_tokens } : { usd: 0, tokens: 0 };
      this.totals.reserve({ usd: reservation.usd - held.usd, tokens: reservation.tokens - held.tokens });
      this.tasks.noteDeadline(leaseUntil);
      const checkpoint = row.checkpoint === null ? null : CheckpointSchema.parse(JSON.parse(row.checkpoint));
      const notedTurn = (checkpoint?.turns ?? 0) + 1;
      // A task the lane starts at once is noted for PRE_NOTE_MS; a standby task waits in its lane
      // for one of the lane's tasks to end (its refill's worth of them, a second or two for a lane
      // of 6), so its note holds as long as its first lease: noted for 2 s, the last of a lane's
      // standby tasks each needed a note of their own (an RPC a call) when they started.
      const notedUntil = asStandby ? Math.max(now + PRE_NOTE_MS, leaseUntil) : now + PRE_NOTE_MS;
      if (lane !== undefined) {
        notes.push({
          start: {
            taskId: task.id,
            attempt: decision.attempt,
            turn: notedTurn,
            model,
            // The estimate the swarm is priced with, plus the conversation a resumed attempt carries.
            promptTokens: estimatePromptTokens(swarm.system, row.prompt) + Math.ceil((row.checkpoint?.length ?? 0) / 4),
            maxTokens: config.limits.max_output_tokens,
            startedAt: now,
          },
          until: notedUntil,
        });
      }
      result.granted.push({
        taskId: task.id,
        attempt: decision.attempt,
        prompt: row.prompt,
        leaseUntil,
        runUntil,
        model,
        timeoutS,
        kind: task.kind,
        override: row.override === null ? null : OverrideSchema.parse(JSON.parse(row.override)),
        checkpoint,
        ...(lane === undefined ? {} : { notedTurn, notedUntil }),
        ...(asStandby ? { standby: true } : {}),
        // Granted under the warm-up's cap: the task whose first call's headers release the rest.
        ...(warmupCap !== null && !asStandby ? { warmup: true } : {}),
      });
      if (windowGrants >= want && result.granted.length - windowGrants >= standbyRoom) break;
    }
    if (lane !== undefined) this.ledger.preNote(swarm, notes, lane.id);
    if (warmupCap !== null && windowGrants > 0) this.warmup.granted(swarm, now);
    return result;
  }

  /**
   * Standby tasks a lane started in the place of tasks that ended: they now hold those places in
   * the window. Idempotent (a repeated pull promotes nothing twice).
   */
  promote(promoted: readonly { taskId: string; attempt: number }[]): void {
    for (const task of promoted) this.intoWindow(task);
  }

  /**
   * Of the standby tasks a lane holds, as many as the window has room for (and the lane wants)
   * enter it now: the lane starts them (`PullResponse.run`). Before any new grant, so a task the
   * lane already holds is never outrun by one it would have to be sent.
   */
  runHeld(swarm: SwarmRow, held: readonly { taskId: string; attempt: number }[], want: number): { taskId: string; attempt: number }[] {
    const run: { taskId: string; attempt: number }[] = [];
    const cap = Math.min(swarm.window, this.failFast.inFlightCap(swarm) ?? swarm.window);
    let room = Math.min(want, cap - this.totals.inFlight());
    for (const task of held) {
      if (room <= 0) break;
      if (!this.intoWindow(task)) continue;
      run.push(task);
      room -= 1;
    }
    return run;
  }

  private intoWindow(task: { taskId: string; attempt: number }): boolean {
    const cursor = this.sql.exec("UPDATE tasks SET standby = 0 WHERE id = ? AND attempts = ? AND state = 'running' AND standby = 1", task.taskId, task.attempt);
    if (cursor.rowsWritten === 0) return false;
    this.totals.standbyMoved(-1);
    return true;
  }

  /**
   * Standby tasks handed back unstarted: pending again (cancelled in a cancelled swarm), their
   * reservation released, their attempt given back to max_attempts (it made no call, and its number
   * is never handed out again) and their grant's note dropped unbilled. Returns whether any ended.
   */
  release(swarm: SwarmRow, released: readonly { taskId: string; attempt: number }[], now: number): boolean {
    let ended = false;
    for (const { taskId, attempt } of released) {
      const task = this.store.task(taskId);
      if (task === null || task.state !== "running" || task.standby !== 1 || task.attempts !== attempt) continue;
      this.ledger.settleOpenCalls(swarm, taskId, attempt, now, new Set());
      if (swarm.state === "cancelled") {
        this.tasks.endTask(task, "cancelled", now, { errorClass: null, message: "cancelled before it started" });
        ended = true;
        continue;
      }
      if (task.kind === "task" && this.failFast.stopped(swarm)) {
        this.tasks.endTask(task, "skipped", now, { errorClass: null, message: "skipped: the swarm stopped early (limits.stop_after_failures)" });
        ended = true;
        continue;
      }
      this.tasks.toPending(task);
      this.store.addFreeAttempt(taskId);
    }
    return ended;
  }

  /** Records outcomes and usage; idempotent by task and attempt (and by call id for usage). */
  recordReports(swarm: SwarmRow, reports: TaskReport[], now: number, started?: ReadonlySet<string>): TaskAction[] {
    const limits = this.store.limits(swarm);
    const actions: TaskAction[] = [];
    const budget = limits.retry_budget ?? defaultRetryBudget(swarm.task_count);
    let retriesUsed = swarm.retries_used;
    // The reports' task rows in one statement: the ledger reads their reservations, the outcomes
    // below their states (nothing before those writes the columns a TaskRow holds).
    const rows = this.store.tasksById(reports.map((report) => report.taskId));
    let { successes, rateLimited } = this.ledger.insertCalls(swarm, reports, now, { tasks: rows });
    /** How sub-tasks ended, for fail fast. */
    const ends: TaskEnd[] = [];
    // An outcome is in: a call its attempt noted and never recorded will not be (billed as unknown).
    const recorded = new Set(
      reports.flatMap((report) => report.calls.map((call) => toCallId(swarm.id, report.taskId, report.attempt, call.turn, call.hedge !== undefined))),
    );
    for (const report of reports) this.ledger.settleOpenCalls(swarm, report.taskId, report.attempt, now, started, recorded);
    // Before the outcomes: a retried or deferred attempt hands its checkpoint to the next one.
    for (const report of reports) {
      if (report.checkpoint !== undefined) this.tasks.saveCheckpoint(report.taskId, report.attempt, report.checkpoint);
      if (report.toolCalls !== undefined && report.toolCalls > 0) this.tasks.raiseToolCalls(report.taskId, report.toolCalls);
    }
    for (const report of reports) {
      // A second report of the task in this pull reads the row its first one wrote.
      const task = rows.has(report.taskId) ? (rows.get(report.taskId) ?? null) : this.store.task(report.taskId);
      rows.delete(report.taskId);
      // Attempts given back only matter to a failure (a success is kept whatever its attempt): only then are they read.
      const free = task === null || report.outcome.kind !== "failed" ? 0 : this.store.freeAttempts(task.id);
      const decision = decideRecord(task && toLifeRow(task), report.attempt, report.outcome, limits.max_attempts + free);
      const { outcome } = report;
      if (task !== null && decision.kind === "succeed" && outcome.kind === "succeeded") {
        this.tasks.endTask(task, "succeeded", now, { output: outcome.output, finishReason: outcome.finishReason });
        if (task.kind === "task") ends.push({ kind: "succeeded" });
      } else if (task !== null && decision.kind === "fail" && outcome.kind === "failed") {
        this.tasks.endTask(task, "failed", now, { errorClass: outcome.class, message: outcome.message, output: outcome.output ?? null });
        if (task.kind === "task") ends.push({ kind: "failed", errorClass: outcome.class, message: outcome.message });
      } else if (task !== null && decision.kind === "defer" && outcome.kind === "deferred" && swarm.state === "cancelled") {
        // Nothing is handed out in a cancelled swarm: waiting to be would leave the task open for ever.
        this.tasks.endTask(task, "cancelled", now, { errorClass: null, message: `cancelled while deferred: ${outcome.reason}` });
      } else if (task !== null && decision.kind === "defer" && outcome.kind === "deferred") {
        // No key had room (or, mid-loop, no time was left): like a 429, the upstream allows fewer
        // calls than the window sends.
        rateLimited = true;
        // The attempt keeps its number, so no number is ever handed out twice (a late or repeated
        // report of this attempt could otherwise pass for the next holder's, and its call ids clash).
        // One that made no call gives its place in max_attempts back instead; one that did resumes
        // from its checkpoint under the next number.
        if (!this.ledger.madeCalls(swarm.id, report.taskId, report.attempt)) this.store.addFreeAttempt(report.taskId);
        const retryAt = now + Math.max(0, outcome.retryAfterMs);
        this.tasks.toRetryWait(task, retryAt);
        actions.push({ taskId: report.taskId, action: "retry", delaySeconds: toQueueDelaySeconds(retryAt - now) });
        continue;
      } else if (decision.kind === "retry" && outcome.kind === "failed" && task !== null) {
        if (swarm.state === "cancelled") {
          this.tasks.endTask(task, "cancelled", now, { errorClass: outcome.class, message: `cancelled while waiting to retry: ${outcome.message}` });
        } else if (task.state !== "retry_wait" && retriesUsed >= budget) {
          this.tasks.endTask(task, "failed", now, {
            errorClass: outcome.class,
            message: `${outcome.message} (not retried: the swarm's retry budget of ${budget} is spent)`,
          });
        } else {
          if (task.state !== "retry_wait") {
            retriesUsed += 1;
            // Back-pressure (429) spends the swarm's retry budget, never the task's attempts.
            if (decision.free) this.store.addFreeAttempt(report.taskId);
          }
          // A 429's back-off grows with every 429 in a row (its attempt was given back, so the
          // attempt number still counts them); Retry-After is its floor, and the window shrinks.
          const backoffAttempt = decision.free ? report.attempt : report.attempt - free;
          const retryAt = task.state === "retry_wait" && task.retry_at !== null ? task.retry_at : now + backoffDelayMs(backoffAttempt, outcome.retryAfterMs);
          this.tasks.toRetryWait(task, retryAt, { errorClass: outcome.class, message: outcome.message });
          actions.push({ taskId: report.taskId, action: "retry", delaySeconds: toQueueDelaySeconds(retryAt - now) });
          continue;
        }
      }
      if (
        task !== null &&
        decision.kind === "ignore" &&
        outcome.kind === "deferred" &&
        task.state === "retry_wait" &&
        report.attempt === task.attempts &&
        task.retry_at !== null
      ) {
        // A repeated deferral of the attempt that waits gets the same answer, as a repeated failure does.
        actions.push({ taskId: report.taskId, action: "retry", delaySeconds: toQueueDelaySeconds(task.retry_at - now) });
        continue;
      }
      actions.push({ taskId: report.taskId, action: "ack", delaySeconds: 0 });
    }
    if (retriesUsed !== swarm.retries_used) this.sql.exec("UPDATE swarm SET retries_used = ?", retriesUsed);
    this.failFast.noteEnds(swarm, ends, now);
    this.adaptWindow(swarm, { successes, rateLimited, now });
    return actions;
  }

  /**
   * Sends the tickets the window needs: lanes whose slots cover the tasks the swarm could run at
   * once. Called from start and the alarm only, never on an agent's path. A failed send forgets
   * its tickets and tries again in a second.
   */
  async issueTickets(now: number): Promise<void> {
    this.sendRetryAt = null;
    const swarm = this.store.swarm();
    if (swarm === null || swarm.finished_at !== null || swarm.state === "cancelled") return;
    if (this.routing.pickModel(swarm, now, { probe: false }) === null) return;
    if (this.windowFullWithLanes(swarm)) return;
    for (const pool of this.pools()) {
      const count = this.tickets.toIssue(this.demand(swarm, pool, now), pool);
      if (count === 0) continue;
      const ids = this.tickets.issue(count, now, swarm.id, pool);
      const queue = pool === "long" ? this.queues.long : this.queues.short;
      const sent: string[] = [];
      // What the tickets were counted for as issue() stored them (a pull answered while a batch is
      // sent may change what the next ones would be counted for), and the swarm's trace.
      const sizing = this.tickets.ticketSizing();
      const traceparent = this.trace.traceparent();
      const traced = traceparent === undefined ? {} : { traceparent };
      try {
        for (const batch of toSendBatches(ids)) {
          await queue.sendBatch(batch.map((ticket) => ({ body: { v: 2, swarm_id: swarm.id, ticket, ...sizing, ...traced } satisfies Ticket })));
          sent.push(...batch);
          this.meters.add("queue_sent", batch.length);
        }
      } catch (error) {
        console.error(
          JSON.stringify({
            event: "ticket_send_failed",
            swarm_id: swarm.id,
            tickets: ids.length - sent.length,
            error: toErrorMessage(error),
          }),
        );
        this.tickets.unissue(ids.filter((id) => !sent.includes(id)));
        this.sendRetryAt = Date.now() + SEND_RETRY_MS;
      }
    }
  }

  /**
   * The window is full and lanes are open: a new lane could be granted nothing (the lanes there
   * take each slot that frees), so only a shortfall once the window has room calls for another.
   * With no lane open, tasks waiting in the window (retries) still need one.
   */
  private windowFullWithLanes(swarm: SwarmRow): boolean {
    return this.totals.inFlight() >= swarm.window && this.tickets.openCount() > 0;
  }

  /**
   * Slots free for the window's room in lanes other than `ticket`'s: the open lanes'
   * (SwarmTickets.freeSlotsExcept), and those of the lanes the room is about to send (its alarm
   * sends them once this request is answered). A tenant's first swarm whose first headers came
   * late sends every lane its window needs from the pull that says so; that pull, granted standby
   * as if no lane could take the rest, left three tasks in a lane whose calls ended 3 s later.
   */
  private freeSlotsElsewhere(swarm: SwarmRow, ticket: string, pool: TaskPool, now: number): number {
    const open = this.tickets.freeSlotsExcept(ticket, pool, now);
    if (this.windowFullWithLanes(swarm)) return open;
    return open + this.tickets.toIssue(this.demand(swarm, pool, now), pool) * this.tickets.slotsPerTicket();
  }

  /** The pools the swarm has tasks in: long tasks run on their own queue (and lanes). */
  private pools(): TaskPool[] {
    if (this.hasLongTasks === null) {
      this.hasLongTasks = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM (SELECT 1 FROM tasks WHERE long = 1 LIMIT 1)").one().n > 0;
    }
    return this.hasLongTasks ? ["short", "long"] : ["short"];
  }

  /**
   * Tasks of a pool the swarm could run at once now: its open tasks, at most the window. A retry
   * that is not due yet needs no lane now (it holds its place in the window, so nothing else does
   * either): the alarm wakes when it is due, instead of a ticket whose lane finds nothing and ends.
   */
  private demand(swarm: SwarmRow, pool: TaskPool, now: number): number {
    const long = pool === "long" ? 1 : 0;
    const open = this.hasLongTasks
      ? this.sql
          .exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE long = ? AND state IN ('pending', 'dispatched', 'running', 'retry_wait')", long)
          .one().n
      : this.totals.open();
    const later =
      this.totals.inState("retry_wait") === 0
        ? 0
        : this.hasLongTasks
          ? this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'retry_wait' AND retry_at > ? AND long = ?", now, long).one().n
          : this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'retry_wait' AND retry_at > ?", now).one().n;
    // Standby tasks are their lanes' already: they need no lane of their own.
    const held = this.hasLongTasks
      ? this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'running' AND standby = 1 AND long = ?", long).one().n
      : this.totals.standby();
    const demand = Math.max(0, Math.min(swarm.window, open - held) - later);
    // The warm-up's one task needs one lane; the others are sent once it is granted (SwarmWarmup).
    return this.warmup.awaitingFirstGrant(swarm) ? Math.min(demand, 1) : demand;
  }

  /**
   * Whether the lane of `ticket` is surplus (isSurplusLane): the room then tells it to retire, and
   * its ticket counts only for the tasks it still carries (SwarmTickets.retire).
   */
  isSurplus(swarm: SwarmRow, ticket: string, pool: TaskPool, now: number, measured: boolean, lane: { running: number; ended: number; slots: number }): boolean {
    if (!measured || swarm.finished_at !== null || swarm.state === "cancelled") return false;
    const waiting = this.totals.waiting();
    if (waiting === 0) return false;
    const demand = this.demand(swarm, pool, now);
    const others = this.tickets.coveredByActiveExcept(ticket, pool, now);
    return isSurplusLane({
      measured,
      waiting,
      demand,
      coveredByOthers: others.slots,
      running: lane.running,
      othersLeastRunning: others.leastRunning,
      // Half the demand to spare, or what a thin lane runs (retireMargin). Header-bound lanes (6
      // running of 8 slots, or 6 just ended) keep the wide margin: 17 of them are what the window needs.
      margin: retireMargin({ demand, running: lane.running, ended: lane.ended, slots: lane.slots }),
    });
  }

  /**
   * One pull's outcomes move the adaptive window. A window at its limit stays there through
   * successes, and then nothing is written: most pulls find it so (each write was a row billed and
   * the swarm row read again in the same request, 115 times in a 1,000 × 200 ms header-bound swarm).
   */
  adaptWindow(swarm: SwarmRow, events: { successes: number; rateLimited: boolean; now: number }): void {
    if (events.successes === 0 && !events.rateLimited) return;
    const window = adjustWindow(
      { window: swarm.window, credit: swarm.window_credit, decreasedAt: swarm.window_decreased_at },
      events,
      this.store.limits(swarm).concurrency,
    );
    if (window.window === swarm.window && window.credit === swarm.window_credit && window.decreasedAt === swarm.window_decreased_at) return;
    this.sql.exec("UPDATE swarm SET window = ?, window_credit = ?, window_decreased_at = ?", window.window, window.credit, window.decreasedAt);
  }

  /** A phase inserted tasks: whether any is long is looked at again. */
  tasksInserted(): void {
    this.hasLongTasks = null;
  }

  /**
   * When the alarm must next act for dispatch: a ticket's deadline, more lanes wanted (the window
   * grew, a lane stopped: now, or when a circuit half-opens if every one is open, and a second after
   * a failed send), or a retry nobody is there to pull.
   */
  nextAlarm(swarm: SwarmRow, now: number): number | null {
    const candidates: number[] = [];
    const ticketAt = this.tickets.nextAlarm();
    if (ticketAt !== null) candidates.push(ticketAt);
    const active = swarm.finished_at === null && swarm.state !== "cancelled";
    if (active) {
      if (!this.windowFullWithLanes(swarm) && this.pools().some((pool) => this.tickets.toIssue(this.demand(swarm, pool, now), pool) > 0)) {
        const parked = this.routing.parkedUntil();
        // After a failed send, not before its retry: the queue is down, and sending at once again would spin.
        candidates.push(Math.max(parked ?? now, this.sendRetryAt ?? 0));
      } else if (this.tickets.openCount() === 0 && this.totals.inState("retry_wait") > 0) {
        const at = this.sql.exec<{ at: number | null }>("SELECT MIN(retry_at) AS at FROM tasks WHERE state = 'retry_wait'").one().at;
        if (at !== null) candidates.push(at);
      }
    }
    return candidates.length === 0 ? null : Math.min(...candidates);
  }
}

/** The tighter of two caps on tasks in flight (null: none). */
function minCap(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  return b === null ? a : Math.min(a, b);
}
