// SwarmRoom: one SQLite-backed Durable Object per swarm, the swarm's single source of truth.
// It owns task states, leases, results, per-call usage, the dispatch window and completion; it
// never calls a model (a Durable Object is single-threaded and billed for wall time).
import { DurableObject } from "cloudflare:workers";
import { adjustWindow, defaultRetryBudget } from "../core/adaptive-window.ts";
import { admitSwarm } from "../core/admit-swarm.ts";
import { fitsBudget, toBudgetReason, type Amount } from "../core/budget.ts";
import type { ErrorDetail } from "../core/errors.ts";
import { reduceOutputs, toWire, type TaskOutput } from "../core/reducers.ts";
import { toModelMix } from "../core/route-model.ts";
import type { ErrorClass } from "../core/error-class.ts";
import { readRoomSettings, type RoomSettings } from "../core/env-settings.ts";
import { capOfTenant } from "../core/tenant-budget.ts";
import type { TenantBudget } from "./tenant-budget.ts";
import { backoffDelayMs, toQueueDelaySeconds } from "../core/retry-policy.ts";
import { PlannerSpecSchema, SwarmMetadataSchema, type Limits } from "../core/spec-schema.ts";
import type {
  BillableView,
  CallsReport,
  PlanView,
  ScratchpadRequest,
  ScratchpadResponse,
  ClaimedTask,
  PullRequest,
  PullResponse,
  TaskPool,
  ResultsPage,
  StartSwarmInput,
  SwarmStatusWire,
  TaskAction,
  TaskCounts,
  TaskReport,
  TaskResult,
  TaskState,
} from "../core/swarm-contract.ts";
import { IN_FLIGHT_TASK_STATES } from "../core/swarm-contract.ts";
import { decideCompletion, decideGrant, decideRecord } from "../core/task-transitions.ts";
import { toSendBatches, type Ticket } from "../core/ticket.ts";
import { migrateSwarmRoom } from "./swarm-room-schema.ts";
import { CheckpointSchema, OverrideSchema, TASK_COLUMNS, type SwarmRow, type TaskRow } from "./swarm-room-rows.ts";
import { advancePhase, insertPlanTask, insertTasks, llmOutput, phaseFailure, planView, reduceSpecOf, reductionView, type PhaseRoom } from "./swarm-phases.ts";
import { runScratchpad } from "./swarm-scratchpad.ts";
import { SwarmBudget } from "./swarm-budget.ts";
import { SwarmCircuits } from "./swarm-circuits.ts";
import { SwarmLedger } from "./swarm-ledger.ts";
import { SwarmMeters } from "./swarm-meters.ts";
import { SwarmTasks } from "./swarm-tasks.ts";
import { SwarmTickets } from "./swarm-tickets.ts";
import { SwarmRouting } from "./swarm-routing.ts";
import { SwarmStore, toLifeRow } from "./swarm-store.ts";
import { SwarmTotals } from "./swarm-totals.ts";

/** The bindings and settings the SwarmRoom reads; the orchestrator's Env provides them. */
export interface SwarmRoomEnv {
  LEDGER_DB: D1Database;
  TASK_QUEUE: Queue;
  /** The long-chain pool: tasks flagged `long` go here (TASK_QUEUE when unbound). */
  LONG_TASK_QUEUE?: Queue;
  LANE_SLOTS?: string;
  MODEL_PRICES?: string;
  GATEWAY_CONFIG?: string;
  TENANT_BUDGETS?: string;
  /** Monthly caps per tenant (absent: none are enforced). */
  TENANT_BUDGET?: DurableObjectNamespace<TenantBudget>;
  LEASE_GRACE_S?: string;
  TOOL_TURN_LEASE_S?: string;
  LEDGER_FLUSH_MS?: string;
}

/** After a failed D1 flush, the next try waits this long. */
const FLUSH_RETRY_MS = 5_000;
/**
 * A pull's answer crosses an RPC boundary (32 MiB limit): past this many characters of prompts and checkpoints the
 * remaining tasks are deferred to a redelivery instead of granted.
 */
const CLAIM_MAX_PROMPT_CHARS = 8_000_000;

/** Per model call: `long_timeout_s` for a task flagged long, else `timeout_s`. */
const toCallTimeoutS = (task: { long: number } | null, limits: Limits): number => (task?.long === 1 ? limits.long_timeout_s : limits.timeout_s);

const toIso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

type StartResult = { created: boolean; refused?: ErrorDetail[]; code?: "invalid_spec" | "budget_exceeded" };

export class SwarmRoom extends DurableObject<SwarmRoomEnv> {
  private readonly sql: SqlStorage;
  private readonly settings: RoomSettings;
  /** The alarm time this instance last set; null = unknown (read it from storage). */
  private alarmAt: number | null = null;
  /** Whether any task is flagged long (its own pool of tickets); null = not looked yet. */
  private hasLongTasks: boolean | null = null;
  private readonly meters: SwarmMeters;
  private readonly store: SwarmStore;
  private readonly totals: SwarmTotals;
  private readonly tickets: SwarmTickets;
  private readonly circuits: SwarmCircuits;
  private readonly routing: SwarmRouting;
  private readonly budget: SwarmBudget;
  private readonly tasks: SwarmTasks;
  private readonly ledger: SwarmLedger;

  constructor(ctx: DurableObjectState, env: SwarmRoomEnv) {
    super(ctx, env);
    migrateSwarmRoom(ctx.storage.sql);
    SwarmTickets.migrate(ctx.storage.sql);
    SwarmMeters.migrate(ctx.storage.sql);
    SwarmStore.migrate(ctx.storage.sql);
    this.meters = new SwarmMeters(ctx.storage.sql);
    this.sql = this.meters.sql;
    this.store = new SwarmStore(this.sql);
    this.settings = readRoomSettings(env);
    this.totals = new SwarmTotals(this.sql);
    this.tickets = new SwarmTickets(this.sql, this.settings.laneSlots);
    this.circuits = new SwarmCircuits(this.sql);
    this.routing = new SwarmRouting(this.sql, this.store, this.totals, this.circuits, this.settings);
    this.budget = new SwarmBudget(this.sql, this.store, this.totals, this.routing, this.settings.prices, env.TENANT_BUDGET);
    this.tasks = new SwarmTasks(this.sql, this.store, this.totals);
    this.ledger = new SwarmLedger(this.sql, this.store, this.totals, this.routing, this.meters, this.settings, env.LEDGER_DB);
  }

  // ── RPC: orchestrator ──────────────────────────────────────────────────────────────────────

  /** Stores the swarm and its tasks and starts dispatch. Idempotent by swarm id. */
  async start(input: StartSwarmInput): Promise<StartResult> {
    this.meters.add("do_requests");
    try {
      return await this.startSwarm(input);
    } finally {
      this.meters.save();
    }
  }

  private async startSwarm(input: StartSwarmInput): Promise<StartResult> {
    if (this.store.swarm() !== null) return { created: false };
    const { spec } = input;
    const mix = toModelMix(spec.model);
    const cap = capOfTenant(this.settings.tenantBudgets, input.tenant);
    // The orchestrator admitted the spec before this call; the room asks again, with the same rules and words.
    const admitted = admitSwarm(spec, { gateway: this.settings.gateway, prices: this.settings.prices, tenantCap: cap });
    if (!admitted.ok) return { created: false, refused: admitted.error };
    const reserved = await this.budget.reserveTenant(input, mix, cap);
    if (!reserved.ok) return reserved.refused;
    const { budget, tenantMonth } = reserved;
    // The tenant reservation awaited: a concurrent start of the same id may have won meanwhile.
    if (this.store.swarm() !== null) return { created: false };
    const planner = spec.goal === undefined ? null : PlannerSpecSchema.parse(spec.planner ?? {});
    this.store.insertSwarm(input, { mix, budget, tenantMonth, planner });
    const stored = this.store.swarm();
    if (planner !== null && stored !== null) {
      insertPlanTask(this.sql, stored, planner, spec.limits, null);
    } else {
      insertTasks(this.sql, input.tasks);
    }
    this.totals.invalidate();
    // Tickets first (the first lanes start while D1 is written); then the index row, so the swarm
    // is listed at once; if D1 is down the alarm retries.
    await this.issueTickets(Date.now());
    try {
      await this.flush();
    } catch (error) {
      console.error(`swarm ${input.swarmId}: index write failed, retrying from the alarm`, error);
    }
    const started = this.store.swarm();
    if (started !== null) await this.planAlarm(started, Date.now());
    return { created: true };
  }

  async getStatus(tenant: string): Promise<SwarmStatusWire | null> {
    // Read-only requests are counted in memory and stored with the next write.
    this.meters.add("do_requests");
    const swarm = this.store.swarm();
    if (swarm === null || swarm.tenant !== tenant) return null;
    return this.toStatus(swarm);
  }

  async getResults(tenant: string, cursor: string | null, limit: number): Promise<ResultsPage | null> {
    this.meters.add("do_requests");
    const swarm = this.store.swarm();
    if (swarm === null || swarm.tenant !== tenant) return null;
    const after = cursor === null ? 0 : Number(cursor);
    const pageSize = Math.min(Math.max(1, Math.floor(limit)), 1_000);
    const rows = this.sql
      .exec<{
        seq: number;
        id: string;
        state: TaskState;
        tool_calls: number;
        output: string | null;
        error_class: ErrorClass | null;
        error_message: string | null;
        attempts: number;
        calls: number;
        prompt_tokens: number | null;
        cached_tokens: number | null;
        completion_tokens: number | null;
        total_tokens: number | null;
        cost_usd: number | null;
        latency_ms: number | null;
      }>(
        `SELECT t.seq, t.id, t.state, t.tool_calls, t.output, t.error_class, t.error_message, t.attempts,
                COUNT(c.call_id) AS calls, SUM(c.prompt_tokens) AS prompt_tokens, SUM(c.cached_tokens) AS cached_tokens,
                SUM(c.completion_tokens) AS completion_tokens, SUM(c.total_tokens) AS total_tokens,
                SUM(c.cost_usd) AS cost_usd, SUM(c.latency_ms) AS latency_ms
         FROM tasks t LEFT JOIN calls c ON c.task_id = t.id
         WHERE t.seq > ? AND t.kind = 'task' GROUP BY t.seq ORDER BY t.seq LIMIT ?`,
        after,
        pageSize + 1,
      )
      .toArray();
    const page = rows.slice(0, pageSize);
    const results: TaskResult[] = page.map((row) => ({
      task_id: row.id,
      state: row.state,
      output: row.output,
      error: row.error_class === null ? null : { class: row.error_class, message: row.error_message ?? "" },
      attempts: row.attempts,
      tool_calls: row.tool_calls,
      usage: {
        calls: row.calls,
        prompt_tokens: row.prompt_tokens ?? 0,
        cached_tokens: row.cached_tokens ?? 0,
        completion_tokens: row.completion_tokens ?? 0,
        total_tokens: row.total_tokens ?? 0,
      },
      cost_usd: row.cost_usd ?? 0,
      latency_ms: row.latency_ms,
    }));
    const last = page[page.length - 1];
    return { results, next_cursor: rows.length > pageSize && last ? String(last.seq) : null };
  }

  // ── RPC: agent Worker (continuous pull: each pull records outcomes and fills free slots) ─────

  /**
   * A lane's pull: records its finished outcomes (idempotent by task and attempt), then hands it up
   * to `want` tasks for its free slots, within the window, the budget and the circuits. It awaits
   * no D1 write and no queue send: tickets and flushes go out from the alarm.
   */
  async pull(request: PullRequest): Promise<PullResponse> {
    this.meters.add("do_requests");
    try {
      const swarm = this.store.swarm();
      if (swarm === null) {
        return {
          config: null,
          granted: [],
          actions: request.reports.map((r) => ({ taskId: r.taskId, action: "ack", delaySeconds: 0 })),
          stop: true,
          retryInMs: null,
        };
      }
      const now = Date.now();
      const actions = request.reports.length > 0 ? this.recordReports(swarm, request.reports, now) : [];
      let ended = request.reports.length > 0;
      const current = this.store.swarm() ?? swarm;
      const pool: TaskPool = request.pool ?? "short";
      const grant =
        request.final || request.want <= 0
          ? { granted: [], ended: false, blocked: false }
          : this.grantTasks(current, request.want, now, pool, request.endBy ?? null);
      ended ||= grant.ended;
      if (ended) this.afterTasksEnded();
      const after = this.store.swarm() ?? current;
      const leaseUntil = grant.granted.reduce((max, t) => Math.max(max, t.leaseUntil), 0);
      const finished = after.finished_at !== null || after.state === "cancelled";
      if (this.tickets.pulled(request.ticket, request.slots, now, leaseUntil, request.final || finished, pool).delivered) this.meters.add("queue_received");
      const retryInMs = grant.granted.length === 0 && !finished ? this.tasks.nextRetryIn(now, pool) : null;
      const waiting = this.totals.inState("pending") + this.totals.inState("retry_wait") + this.totals.inState("dispatched");
      const stop = grant.granted.length === 0 && (finished || grant.blocked || (waiting === 0 && retryInMs === null));
      await this.planAlarm(after, now);
      return { config: this.store.toRunConfig(after), granted: grant.granted, actions, stop, retryInMs };
    } finally {
      this.meters.save();
    }
  }

  /**
   * Up to `want` tasks of the pool, due retries first (they hold their place in the window), then
   * pending tasks while the window has room. Each is leased as its next attempt, with its budget
   * reserved. `blocked`: nothing can be granted until something changes (every circuit open, the
   * budget waiting for reservations to settle, or no task fits the lane's remaining time).
   */
  private grantTasks(
    swarm: SwarmRow,
    want: number,
    now: number,
    pool: TaskPool,
    endBy: number | null,
  ): { granted: ClaimedTask[]; ended: boolean; blocked: boolean } {
    const result = { granted: [] as ClaimedTask[], ended: false, blocked: false };
    if (swarm.finished_at !== null || (swarm.state !== "running" && swarm.state !== "planning" && swarm.state !== "reducing")) return result;
    const config = this.store.toRunConfig(swarm);
    const long = pool === "long" ? 1 : 0;
    const limit = Math.min(want, 1_000);
    const candidates = this.sql
      .exec<TaskRow & { size: number }>(
        `SELECT ${TASK_COLUMNS}, LENGTH(prompt) + COALESCE(LENGTH(checkpoint), 0) AS size FROM tasks
         WHERE state IN ('retry_wait', 'dispatched') AND COALESCE(retry_at, 0) <= ? AND long = ? ORDER BY retry_at, seq LIMIT ?`,
        now,
        long,
        limit,
      )
      .toArray();
    const room = swarm.window - this.totals.inFlight();
    if (candidates.length < limit && room > 0) {
      candidates.push(
        ...this.sql
          .exec<TaskRow & { size: number }>(
            `SELECT ${TASK_COLUMNS}, LENGTH(prompt) + COALESCE(LENGTH(checkpoint), 0) AS size FROM tasks
             WHERE state = 'pending' AND long = ? ORDER BY seq LIMIT ?`,
            long,
            Math.min(limit - candidates.length, room),
          )
          .toArray(),
      );
    }
    const budget = this.store.budget(swarm);
    let promptChars = 0;
    for (const task of candidates) {
      const decision = decideGrant({ ...toLifeRow(task), retryAt: task.retry_at }, now, config.limits.max_attempts + this.store.freeAttempts(task.id));
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
      const toolMs = task.kind === "task" && config.tools.length > 0 ? this.settings.toolTurnLeaseMs : 0;
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
      const leaseUntil = now + runMs + this.settings.leaseGraceMs;
      const row = this.sql
        .exec<{ prompt: string; checkpoint: string | null; override: string | null }>(
          `UPDATE tasks SET state = 'running', attempts = ?, deadline = ?, retry_at = NULL, model = ?, reserved_usd = ?, reserved_tokens = ?,
             started_at = COALESCE(started_at, ?) WHERE id = ? RETURNING prompt, checkpoint, override`,
          decision.attempt,
          leaseUntil,
          model,
          reservation.usd,
          reservation.tokens,
          now,
          task.id,
        )
        .one();
      this.totals.move(task.kind, task.state, "running");
      const held = IN_FLIGHT_TASK_STATES.includes(task.state) ? { usd: task.reserved_usd, tokens: task.reserved_tokens } : { usd: 0, tokens: 0 };
      this.totals.reserve({ usd: reservation.usd - held.usd, tokens: reservation.tokens - held.tokens });
      this.tasks.noteDeadline(leaseUntil);
      result.granted.push({
        taskId: task.id,
        attempt: decision.attempt,
        prompt: row.prompt,
        leaseUntil,
        model,
        timeoutS,
        kind: task.kind,
        override: row.override === null ? null : OverrideSchema.parse(JSON.parse(row.override)),
        checkpoint: row.checkpoint === null ? null : CheckpointSchema.parse(JSON.parse(row.checkpoint)),
      });
      if (result.granted.length >= want) break;
    }
    return result;
  }

  /** Records outcomes and usage; idempotent by task and attempt (and by call id for usage). */
  private recordReports(swarm: SwarmRow, reports: TaskReport[], now: number): TaskAction[] {
    const limits = this.store.limits(swarm);
    const actions: TaskAction[] = [];
    const budget = limits.retry_budget ?? defaultRetryBudget(swarm.task_count);
    let retriesUsed = swarm.retries_used;
    let { successes, rateLimited } = this.ledger.insertCalls(swarm, reports, now);
    // Before the outcomes: a retried or deferred attempt hands its checkpoint to the next one.
    for (const report of reports) {
      if (report.checkpoint !== undefined) this.tasks.saveCheckpoint(report.taskId, report.attempt, report.checkpoint);
      if (report.toolCalls !== undefined && report.toolCalls > 0) {
        this.sql.exec("UPDATE tasks SET tool_calls = MAX(tool_calls, ?) WHERE id = ?", report.toolCalls, report.taskId);
      }
    }
    for (const report of reports) {
      const task = this.store.task(report.taskId);
      const free = task === null ? 0 : this.store.freeAttempts(task.id);
      const decision = decideRecord(task && toLifeRow(task), report.attempt, report.outcome, limits.max_attempts + free);
      const { outcome } = report;
      if (task !== null && decision.kind === "succeed" && outcome.kind === "succeeded") {
        this.tasks.endTask(task, "succeeded", now, { output: outcome.output, finishReason: outcome.finishReason });
      } else if (task !== null && decision.kind === "fail" && outcome.kind === "failed") {
        this.tasks.endTask(task, "failed", now, { errorClass: outcome.class, message: outcome.message, output: outcome.output ?? null });
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
        if (!this.ledger.madeCalls(report.taskId, report.attempt)) this.store.addFreeAttempt(report.taskId);
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
          if (task.state !== "retry_wait") retriesUsed += 1;
          const retryAt =
            task.state === "retry_wait" && task.retry_at !== null ? task.retry_at : now + backoffDelayMs(report.attempt - free, outcome.retryAfterMs);
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
    this.adaptWindow(swarm, { successes, rateLimited, now });
    return actions;
  }

  /**
   * Records calls as soon as they end, before their task's outcome is known, so a consumer that dies
   * mid-batch loses no usage the upstream billed. Idempotent by call id; changes no task state (the
   * outcome comes later with recordResults, whose repeated call rows are then ignored).
   */
  async recordCalls(reports: CallsReport[]): Promise<void> {
    this.meters.add("do_requests");
    try {
      const swarm = this.store.swarm();
      if (swarm === null) return;
      const now = Date.now();
      this.adaptWindow(swarm, { ...this.ledger.insertCalls(swarm, reports, now), now });
      for (const report of reports) {
        if (report.checkpoint !== undefined) this.tasks.saveCheckpoint(report.taskId, report.attempt, report.checkpoint);
      }
      await this.planAlarm(this.store.swarm() ?? swarm, now);
    } finally {
      this.meters.save();
    }
  }

  /**
   * A shared key/value scratchpad for the swarm's agents (the scratchpad_* tools). Values are text;
   * a put replaces. Bounded: SCRATCHPAD_LIMITS (src/core/scratchpad.ts).
   */
  async scratchpad(request: ScratchpadRequest): Promise<ScratchpadResponse> {
    this.meters.add("do_requests");
    try {
      if (this.store.swarm() === null) return { ok: false, error: "the swarm does not exist" };
      return runScratchpad(this.sql, request, Date.now());
    } finally {
      this.meters.save();
    }
  }

  /** A goal's plan in full (status shows its size only). null when the swarm is not the tenant's. */
  async getPlan(tenant: string): Promise<(PlanView & { tasks: { id: string; prompt: string }[] }) | null> {
    this.meters.add("do_requests");
    const swarm = this.store.swarm();
    if (swarm === null || swarm.tenant !== tenant) return null;
    const view = planView(swarm);
    if (view === null) return null;
    const tasks = this.sql.exec<{ id: string; prompt: string }>("SELECT id, prompt FROM tasks WHERE kind = 'task' ORDER BY seq").toArray();
    return { ...view, tasks };
  }

  /**
   * The queue gave up on a ticket (its lanes kept dying): the ticket closes, and the alarm issues
   * another while work is left. Tasks it leased end or return through their leases, as ever.
   */
  async recordDeadTicket(ticket: string): Promise<void> {
    this.meters.add("do_requests");
    try {
      const swarm = this.store.swarm();
      if (swarm === null) return;
      this.tickets.pulled(ticket, 0, Date.now(), 0, true, "short");
      await this.setAlarmNoLaterThan(Date.now());
    } finally {
      this.meters.save();
    }
  }

  /**
   * Stops dispatch at once and ends every task that is not running `cancelled`; running tasks finish
   * and are recorded (their calls are paid for). null when the swarm is not the tenant's.
   */
  async cancel(tenant: string): Promise<{ status: SwarmStatusWire; changed: boolean } | null> {
    this.meters.add("do_requests");
    try {
      return await this.cancelSwarm(tenant);
    } finally {
      this.meters.save();
    }
  }

  private async cancelSwarm(tenant: string): Promise<{ status: SwarmStatusWire; changed: boolean } | null> {
    const swarm = this.store.swarm();
    if (swarm === null || swarm.tenant !== tenant) return null;
    if (swarm.finished_at !== null || swarm.state === "cancelled") return { status: this.toStatus(swarm), changed: false };
    const now = Date.now();
    this.sql.exec("UPDATE swarm SET state = 'cancelled', reason = 'cancelled by request', index_dirty = 1");
    this.sql.exec(
      `UPDATE tasks SET state = 'cancelled', deadline = NULL, retry_at = NULL, reserved_usd = 0, reserved_tokens = 0, finished_at = ?
       WHERE state IN ('pending', 'dispatched', 'retry_wait')`,
      now,
    );
    this.totals.invalidate();
    // Lanes get nothing more; their running tasks still record (and are paid for).
    this.tickets.closeAll();
    this.afterTasksEnded();
    const after = this.store.swarm();
    if (after !== null) await this.planAlarm(after, now);
    return after === null ? null : { status: this.toStatus(after), changed: true };
  }

  // ── Alarm: lease and delivery deadlines, window refill, ledger flush ─────────────────────────

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    this.tasks.forgetNoted();
    this.ledger.forgetNoted();
    this.meters.add("do_requests");
    try {
      const swarm = this.store.swarm();
      if (swarm === null) return;
      const now = Date.now();
      this.tasks.expireLeases(swarm, now);
      this.tickets.expire(now);
      this.afterTasksEnded();
      await this.issueTickets(now);
      try {
        await this.flush();
      } catch (error) {
        console.error(`swarm ${swarm.id}: ledger flush failed, retrying in ${FLUSH_RETRY_MS} ms`, error);
        await this.setAlarmNoLaterThan(Date.now() + FLUSH_RETRY_MS);
      }
      const after = this.store.swarm();
      if (after !== null) await this.planAlarm(after, Date.now(), { exactDeadline: true });
    } finally {
      this.meters.save();
    }
  }

  /**
   * Sends the tickets the window needs: lanes whose slots cover the tasks the swarm could run at
   * once. Called from start and the alarm only, never on an agent's path. A failed send forgets
   * its tickets and tries again in a second.
   */
  private async issueTickets(now: number): Promise<void> {
    const swarm = this.store.swarm();
    if (swarm === null || swarm.finished_at !== null || swarm.state === "cancelled") return;
    if (this.routing.pickModel(swarm, now, { probe: false }) === null) return;
    for (const pool of this.pools()) {
      const count = this.tickets.toIssue(this.demand(swarm, pool, now), pool);
      if (count === 0) continue;
      const ids = this.tickets.issue(count, now, swarm.id, pool);
      const queue = pool === "long" ? (this.env.LONG_TASK_QUEUE ?? this.env.TASK_QUEUE) : this.env.TASK_QUEUE;
      const sent: string[] = [];
      try {
        for (const batch of toSendBatches(ids)) {
          await queue.sendBatch(batch.map((ticket) => ({ body: { v: 2, swarm_id: swarm.id, ticket } satisfies Ticket })));
          sent.push(...batch);
          this.meters.add("queue_sent", batch.length);
        }
      } catch (error) {
        console.error(
          JSON.stringify({
            event: "ticket_send_failed",
            swarm_id: swarm.id,
            tickets: ids.length - sent.length,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
        this.tickets.unissue(ids.filter((id) => !sent.includes(id)));
        await this.setAlarmNoLaterThan(Date.now() + 1_000);
      }
    }
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
    return Math.max(0, Math.min(swarm.window, open) - later);
  }

  // ── internals ─────────────────────────────────────────────────────────────────────────────

  /** One pull's outcomes move the adaptive window. */
  private adaptWindow(swarm: SwarmRow, events: { successes: number; rateLimited: boolean; now: number }): void {
    if (events.successes === 0 && !events.rateLimited) return;
    const window = adjustWindow(
      { window: swarm.window, credit: swarm.window_credit, decreasedAt: swarm.window_decreased_at },
      events,
      this.store.limits(swarm).concurrency,
    );
    this.sql.exec("UPDATE swarm SET window = ?, window_credit = ?, window_decreased_at = ?", window.window, window.credit, window.decreasedAt);
  }

  private counts(): TaskCounts {
    return this.totals.counts();
  }

  /**
   * After outcomes land: move the swarm through its phases (planning → running → reducing), and
   * finish it when nothing is left open. Dispatch is pulled by lanes; tickets go out from the alarm.
   */
  private afterTasksEnded(): void {
    const before = this.store.swarm();
    if (before === null || before.finished_at !== null) return;
    advancePhase(this.phaseRoom(), before);
    const swarm = this.store.swarm();
    if (swarm === null) return;
    // A phase that moved inserted its engine tasks (or the plan's): count them.
    if (swarm.state !== before.state || swarm.plan_attempts !== before.plan_attempts || swarm.reduction !== before.reduction) {
      this.totals.invalidate();
      this.hasLongTasks = null;
    }
    let state = this.totals.open() > 0 ? null : decideCompletion(this.counts(), swarm.state === "cancelled");
    if (state === null) {
      if (swarm.index_dirty === 0) this.sql.exec("UPDATE swarm SET index_dirty = 1");
      return;
    }
    const counts = this.counts();
    // Plan and reduce tasks ended too: a swarm whose plan or final reduction failed says so.
    const failedPhase = phaseFailure(swarm);
    if (failedPhase !== null && state !== "cancelled") state = failedPhase;
    const reason =
      swarm.reason ??
      (state === "completed_with_failures"
        ? `${counts.failed} task(s) failed${counts.skipped_budget > 0 ? `, ${counts.skipped_budget} skipped (budget)` : ""}`
        : null);
    this.sql.exec("UPDATE swarm SET state = ?, finished_at = ?, reason = ?, index_dirty = 1", state, Date.now(), reason);
    this.tickets.closeAll();
    this.ledger.flushSoon(Date.now());
  }

  private toStatus(swarm: SwarmRow): SwarmStatusWire {
    const { cost_usd, ...usage } = this.ledger.usageTotals();
    const limits = this.store.limits(swarm);
    const finished = swarm.finished_at !== null;
    const metadata = swarm.metadata === null ? {} : SwarmMetadataSchema.parse(JSON.parse(swarm.metadata));
    return {
      id: swarm.id,
      name: swarm.name,
      state: swarm.state,
      model: swarm.model,
      tasks: swarm.task_count,
      window: swarm.window,
      counts: this.counts(),
      usage,
      tool_calls: this.sql.exec<{ n: number | null }>("SELECT SUM(tool_calls) AS n FROM tasks").one().n ?? 0,
      cost_usd,
      wall_s: ((swarm.finished_at ?? Date.now()) - swarm.created_at) / 1_000,
      latency_ms: this.ledger.latencyPercentiles(usage.calls),
      output: finished ? this.output(swarm) : null,
      plan: planView(swarm),
      reduction: reductionView(swarm),
      reduce: { kind: reduceSpecOf(swarm).kind },
      max_window: limits.concurrency,
      retries: { used: swarm.retries_used, budget: limits.retry_budget ?? defaultRetryBudget(swarm.task_count) },
      circuits: this.routing.circuitViews(swarm),
      reason: this.routing.reason(swarm),
      models: this.store.mix(swarm),
      budget: this.budget.budgetView(swarm),
      metadata,
      billable: this.billableView(swarm.task_count),
      created_at: toIso(swarm.created_at) ?? "",
      finished_at: toIso(swarm.finished_at),
    };
  }

  private billableView(tasks: number): BillableView {
    const m = this.meters.read();
    const ops = {
      queue_messages_sent: m.queue_sent,
      queue_messages_received: m.queue_received,
      do_requests: m.do_requests,
      do_rows_written: m.do_rows_written,
      d1_rows_written: m.d1_rows_written,
    };
    const per = (n: number) => Math.round((n / tasks) * 1_000) / 1_000;
    return {
      ...ops,
      per_task:
        tasks === 0
          ? null
          : {
              queue_messages_sent: per(ops.queue_messages_sent),
              queue_messages_received: per(ops.queue_messages_received),
              do_requests: per(ops.do_requests),
              do_rows_written: per(ops.do_rows_written),
              d1_rows_written: per(ops.d1_rows_written),
            },
    };
  }

  /** The reduced answer of a finished swarm: by code, or what the llm reduction produced. */
  private output(swarm: SwarmRow): SwarmStatusWire["output"] {
    const reduce = reduceSpecOf(swarm);
    return reduce.kind === "llm" ? llmOutput(swarm) : toWire(reduceOutputs(reduce, this.succeededOutputs()));
  }

  /** What the phases (planning, llm reduction) read of the room. */
  private phaseRoom(): PhaseRoom {
    return {
      sql: this.sql,
      counts: () => this.counts(),
      succeededOutputs: () => this.succeededOutputs(),
      limits: (swarm) => this.store.limits(swarm),
      gatewayContext: this.routing.gatewayContext,
    };
  }

  /** Succeeded outputs in task order: what the reducers merge. */
  private succeededOutputs(): TaskOutput[] {
    return this.sql
      .exec<{ task_id: string; output: string }>("SELECT id AS task_id, output FROM tasks WHERE kind = 'task' AND state = 'succeeded' ORDER BY seq")
      .toArray();
  }

  /** What D1 and the tenant's month must hear: a finished swarm's settlement, then the ledger rows and the index row. */
  private async flush(): Promise<void> {
    const swarm = this.store.swarm();
    if (swarm === null) return;
    await this.budget.settleTenant(swarm);
    await this.ledger.flush(swarm);
  }

  /**
   * Keeps one alarm at the earliest moment something is due: a lease, a ticket's deadline, a ledger
   * flush, a retry nobody is there to pull, the window needing more tickets, a circuit half-opening.
   * Each owner says when it needs it; this only takes the minimum (no aggregate over the swarm,
   * except the exact lease minimum when the alarm itself asks).
   */
  private async planAlarm(swarm: SwarmRow, now: number, options: { exactDeadline?: boolean } = {}): Promise<void> {
    const candidates: number[] = [];
    const leaseAt = this.tasks.nextAlarm({ exact: options.exactDeadline === true });
    if (leaseAt !== null) candidates.push(leaseAt);
    const ticketAt = this.tickets.nextAlarm();
    if (ticketAt !== null) candidates.push(ticketAt);
    const flushAt = this.ledger.nextAlarm(swarm, now);
    if (flushAt !== null) candidates.push(flushAt);
    const active = swarm.finished_at === null && swarm.state !== "cancelled";
    if (active) {
      // More lanes wanted (the window grew, a lane stopped): the alarm sends their tickets now.
      if (this.pools().some((pool) => this.tickets.toIssue(this.demand(swarm, pool, now), pool) > 0)) {
        const parked = this.routing.parkedUntil();
        candidates.push(parked ?? now);
      } else if (this.tickets.openCount() === 0 && this.totals.inState("retry_wait") > 0) {
        const at = this.sql.exec<{ at: number | null }>("SELECT MIN(retry_at) AS at FROM tasks WHERE state = 'retry_wait'").one().at;
        if (at !== null) candidates.push(at);
      }
    }
    if (candidates.length === 0) return;
    await this.setAlarmNoLaterThan(Math.min(...candidates));
  }

  private async setAlarmNoLaterThan(at: number): Promise<void> {
    if (this.alarmAt === null) this.alarmAt = await this.ctx.storage.getAlarm();
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    await this.ctx.storage.setAlarm(at);
    this.alarmAt = at;
  }
}
