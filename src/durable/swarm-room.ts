// SwarmRoom: one SQLite-backed Durable Object per swarm, the swarm's single source of truth.
// It owns task states, leases, results, per-call usage, the dispatch window and completion; it
// never calls a model (a Durable Object is single-threaded and billed for wall time).
import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import { adjustWindow, defaultRetryBudget } from "../core/adaptive-window.ts";
import { admitSwarm } from "../core/admit-swarm.ts";
import { chargeOfCall, fitsBudget, toBudgetReason, worstCaseAttempt, worstCaseCall, type Amount } from "../core/budget.ts";
import { callsPerAttempt } from "../core/agent-limits.ts";
import type { ErrorDetail } from "../core/errors.ts";
import { reduceOutputs, toWire, type TaskOutput } from "../core/reducers.ts";
import { PLAN_MAX_PROMPT_CHARS } from "../core/planner.ts";
import { assignModel, toModelLabel, toModelMix, type WeightedModel } from "../core/route-model.ts";
import {
  acquireCircuit,
  CLOSED_CIRCUIT,
  isUpstreamHealthFailure,
  recordCircuitOutcome,
  toCurrentCircuit,
  toHalfOpenAt,
  type Circuit,
} from "../core/circuit-breaker.ts";
import type { ErrorClass } from "../core/error-class.ts";
import { toCallId } from "../core/ids.ts";
import { percentile } from "../core/percentile.ts";
import { readRoomSettings, type RoomSettings } from "../core/env-settings.ts";
import { costOfUsage, resolvePrice, type ModelPrice } from "../core/pricing.ts";
import { capOfTenant, toBudgetMonth } from "../core/tenant-budget.ts";
import type { TenantBudget } from "./tenant-budget.ts";
import { backoffDelayMs, toQueueDelaySeconds } from "../core/retry-policy.ts";
import {
  BudgetSchema,
  LimitsSchema,
  PlannerSpecSchema,
  ResponseFormatSchema,
  SwarmMetadataSchema,
  ToolSpecSchema,
  type Budget,
  type Limits,
  type ResponseFormat,
  type ToolSpec,
} from "../core/spec-schema.ts";
import type {
  AgentCheckpoint,
  BudgetView,
  CallRecord,
  CallsReport,
  PlanView,
  ScratchpadRequest,
  ScratchpadResponse,
  TaskKind,
  ToolSpecWire,
  CircuitView,
  ClaimOptions,
  ClaimResponse,
  RecordResponse,
  ResultsPage,
  StartSwarmInput,
  SwarmStatusWire,
  TaskAction,
  TaskCounts,
  TaskReport,
  TaskResult,
  TaskRunConfig,
  TaskState,
  UsageTotals,
} from "../core/swarm-contract.ts";
import { decideClaim, decideCompletion, decideRecord, isTerminal, type TaskLifeRow } from "../core/task-transitions.ts";
import { toPacketSize, toPackets, toSendBatches, type TaskPacket } from "../core/task-packet.ts";
import { flushToLedger, type LedgerRow, type SwarmIndexRow } from "../ledger/d1-ledger.ts";
import { migrateSwarmRoom } from "./swarm-room-schema.ts";
import { CheckpointSchema, OverrideSchema, TASK_COLUMNS, WeightedModelsSchema, type CircuitRow, type SwarmRow, type TaskRow } from "./swarm-room-rows.ts";
import {
  advancePhase,
  engineModels,
  firstModel,
  insertPlanTask,
  insertTasks,
  llmOutput,
  phaseFailure,
  PLAN_ATTEMPTS,
  plannerOf,
  plannerOutputTokens,
  planView,
  reduceSpecOf,
  reducerContextTokens,
  reducerModel,
  reductionView,
  type PhaseRoom,
} from "./swarm-phases.ts";
import { runScratchpad } from "./swarm-scratchpad.ts";

/** The bindings and settings the SwarmRoom reads; the orchestrator's Env provides them. */
export interface SwarmRoomEnv {
  LEDGER_DB: D1Database;
  TASK_QUEUE: Queue;
  /** The long-chain pool: tasks flagged `long` go here (TASK_QUEUE when unbound). */
  LONG_TASK_QUEUE?: Queue;
  DISPATCH_PACKET_SIZE?: string;
  MODEL_PRICES?: string;
  GATEWAY_CONFIG?: string;
  TENANT_BUDGETS?: string;
  /** Monthly caps per tenant (absent: none are enforced). */
  TENANT_BUDGET?: DurableObjectNamespace<TenantBudget>;
  LEASE_GRACE_S?: string;
  TOOL_TURN_LEASE_S?: string;
  LEDGER_FLUSH_MS?: string;
}

/** A dispatched message that no consumer claimed by then is sent again (local queues lose messages on restart). */
const DISPATCH_DEADLINE_MS = 5 * 60_000;
/** After a failed D1 flush, the next try waits this long. */
const FLUSH_RETRY_MS = 5_000;
/** Ledger rows per D1 transaction. */
const FLUSH_CHUNK = 500;
/**
 * A claim's answer crosses an RPC boundary (32 MiB limit): past this many characters of prompts and checkpoints the
 * remaining tasks are deferred to a redelivery instead of granted.
 */
const CLAIM_MAX_PROMPT_CHARS = 8_000_000;

/** A checkpoint shares its task's row (2 MB in all) with the prompt (≤ 200,000 chars) and output. */
const CHECKPOINT_MAX_BYTES = 1_000_000;

function toToolWires(tools: readonly ToolSpec[]): ToolSpecWire[] {
  return tools.map((tool) =>
    typeof tool === "string" ? tool : { name: tool.name, description: tool.description, url: tool.url, parameters_json: JSON.stringify(tool.parameters) },
  );
}

/** Per model call: `long_timeout_s` for a task flagged long, else `timeout_s`. */
const toCallTimeoutS = (task: { long: number } | null, limits: Limits): number => (task?.long === 1 ? limits.long_timeout_s : limits.timeout_s);

const toIso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

const toCapText = (cap: { max_usd_per_month?: number | undefined; max_tokens_per_month?: number | undefined }): string =>
  [cap.max_usd_per_month !== undefined ? `$${cap.max_usd_per_month}` : null, cap.max_tokens_per_month !== undefined ? `${cap.max_tokens_per_month} tokens` : null]
    .filter((s) => s !== null)
    .join(" / ");

export class SwarmRoom extends DurableObject<SwarmRoomEnv> {
  private readonly sql: SqlStorage;
  private readonly settings: RoomSettings;
  /** The alarm time this instance last set; null = unknown (read it from storage). */
  private alarmAt: number | null = null;
  /** Memo of toRunConfig. */
  private runConfig: TaskRunConfig | null = null;
  /** p50/p95 over the calls recorded so far, recomputed only when a call was added (status is polled). */
  private latencyCache: { calls: number; p50: number | null; p95: number | null } | null = null;

  constructor(ctx: DurableObjectState, env: SwarmRoomEnv) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.settings = readRoomSettings(env);
    migrateSwarmRoom(this.sql);
  }

  // ── RPC: orchestrator ──────────────────────────────────────────────────────────────────────

  /** Stores the swarm and its tasks and starts dispatch. Idempotent by swarm id. */
  async start(input: StartSwarmInput): Promise<{ created: boolean; refused?: ErrorDetail[]; code?: "invalid_spec" | "budget_exceeded" }> {
    if (this.swarm() !== null) return { created: false };
    const { spec } = input;
    const mix = toModelMix(spec.model);
    const cap = capOfTenant(this.settings.tenantBudgets, input.tenant);
    // The orchestrator admitted the spec before this call; the room asks again, with the same rules and words.
    const admitted = admitSwarm(spec, { gateway: this.settings.gateway, prices: this.settings.prices, tenantCap: cap });
    if (!admitted.ok) return { created: false, refused: admitted.error };
    let budget = spec.budget ?? null;
    let tenantMonth: string | null = null;
    if (cap !== null && this.env.TENANT_BUDGET !== undefined) {
      // Reserve the swarm's worst case against its tenant's month; what was granted becomes (or
      // tightens) the swarm's own budget, which the window then enforces call by call.
      tenantMonth = toBudgetMonth(input.createdAt);
      const worst = this.worstCaseOfSwarm(input, mix.map((m) => m.model));
      const grant = await this.tenantBudget(input.tenant, tenantMonth).reserve({
        swarmId: input.swarmId,
        usd: Math.min(spec.budget?.max_usd ?? Number.POSITIVE_INFINITY, worst.usd),
        tokens: Math.min(spec.budget?.max_tokens ?? Number.POSITIVE_INFINITY, worst.tokens),
        maxUsd: cap.max_usd_per_month ?? null,
        maxTokens: cap.max_tokens_per_month ?? null,
      });
      // A grant that cannot pay for even one call would only skip every task: refuse the swarm.
      if ((grant.usd !== null && grant.usd < worst.oneCall.usd) || (grant.tokens !== null && grant.tokens < worst.oneCall.tokens)) {
        await this.tenantBudget(input.tenant, tenantMonth).settle({ swarmId: input.swarmId, usd: 0, tokens: 0 });
        return {
          created: false,
          code: "budget_exceeded",
          refused: [{ path: "budget", message: `this API token's monthly budget (${toCapText(cap)}) for ${tenantMonth} is spent` }],
        };
      }
      budget = {
        fallback_at: budget?.fallback_at ?? 0.2,
        ...(budget?.fallback_tier !== undefined ? { fallback_tier: budget.fallback_tier } : {}),
        ...(grant.usd !== null || budget?.max_usd !== undefined ? { max_usd: Math.min(grant.usd ?? Number.POSITIVE_INFINITY, budget?.max_usd ?? Number.POSITIVE_INFINITY) } : {}),
        ...(grant.tokens !== null || budget?.max_tokens !== undefined
          ? { max_tokens: Math.min(grant.tokens ?? Number.POSITIVE_INFINITY, budget?.max_tokens ?? Number.POSITIVE_INFINITY) }
          : {}),
      };
    }
    // The tenant reservation awaited: a concurrent start of the same id may have won meanwhile.
    if (this.swarm() !== null) return { created: false };
    const origin = input.origin.kind === "api" ? "api" : `schedule:${input.origin.scheduleId}`;
    const planner = spec.goal === undefined ? null : PlannerSpecSchema.parse(spec.planner ?? {});
    this.sql.exec(
      `INSERT INTO swarm (id, tenant, name, model, model_mix, budget, tenant_month, reduce, fallback, system, limits, response_format, metadata, origin, state, window, task_count, created_at,
         tools, http_allowlist, parallel_tool_calls, goal, planner)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      input.swarmId,
      input.tenant,
      spec.name,
      toModelLabel(spec.model),
      JSON.stringify(mix),
      budget ? JSON.stringify(budget) : null,
      tenantMonth,
      spec.reduce ? JSON.stringify(spec.reduce) : null,
      spec.fallback && spec.fallback.length > 0 ? JSON.stringify(spec.fallback) : null,
      spec.system ?? null,
      JSON.stringify(spec.limits),
      spec.response_format ? JSON.stringify(spec.response_format) : null,
      spec.metadata ? JSON.stringify(spec.metadata) : null,
      origin,
      planner === null ? "running" : "planning",
      spec.limits.concurrency,
      input.tasks.length,
      input.createdAt,
      spec.tools && spec.tools.length > 0 ? JSON.stringify(spec.tools) : null,
      spec.http_allowlist && spec.http_allowlist.length > 0 ? JSON.stringify(spec.http_allowlist) : null,
      spec.parallel_tool_calls === undefined ? null : spec.parallel_tool_calls ? 1 : 0,
      spec.goal ?? null,
      planner === null ? null : JSON.stringify(planner),
    );
    const stored = this.swarm();
    if (planner !== null && stored !== null) {
      insertPlanTask(this.sql, stored, planner, spec.limits, null);
    } else {
      insertTasks(this.sql, input.tasks);
    }
    // The index row is written now so the swarm is listed at once; if D1 is down the alarm retries.
    try {
      await this.flush();
    } catch (error) {
      console.error(`swarm ${input.swarmId}: index write failed, retrying from the alarm`, error);
    }
    await this.dispatch();
    await this.scheduleAlarm();
    return { created: true };
  }

  async getStatus(tenant: string): Promise<SwarmStatusWire | null> {
    const swarm = this.swarm();
    if (swarm === null || swarm.tenant !== tenant) return null;
    return this.toStatus(swarm);
  }

  async getResults(tenant: string, cursor: string | null, limit: number): Promise<ResultsPage | null> {
    const swarm = this.swarm();
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

  // ── RPC: agent Worker (one claim and one record per consumer batch) ─────────────────────────

  /** Leases each claimable task to the caller. A finished or validly leased task is refused. */
  async claim(taskIds: string[], options: ClaimOptions = {}): Promise<ClaimResponse> {
    const swarm = this.swarm();
    if (swarm === null) return { config: null, granted: [], refused: taskIds.map((taskId) => ({ taskId, reason: "unknown" })) };
    const config = this.toRunConfig(swarm);
    const now = Date.now();
    const waves = Math.min(100, Math.max(1, Math.floor(options.waves ?? 1)));
    const response: ClaimResponse = { config, granted: [], refused: [] };
    let ended = false;
    let promptChars = 0;
    for (const taskId of new Set(taskIds)) {
      const task = this.task(taskId);
      const decision = decideClaim(task && this.toLifeRow(task), now, config.limits.max_attempts);
      switch (decision.kind) {
        case "grant": {
          const size = this.sql.exec<{ n: number }>("SELECT LENGTH(prompt) + COALESCE(LENGTH(checkpoint), 0) AS n FROM tasks WHERE id = ?", taskId).one().n;
          if (response.granted.length > 0 && promptChars + size > CLAIM_MAX_PROMPT_CHARS) {
            response.refused.push({ taskId, reason: "deferred" });
            break;
          }
          const model = this.pickModel(swarm, now, { probe: true, taskId, hint: task?.model_hint ?? null });
          if (model === null) {
            // Every circuit is open: take the task back out of the window; dispatch resumes when one half-opens.
            this.sql.exec("UPDATE tasks SET state = 'pending', deadline = NULL WHERE id = ?", taskId);
            response.refused.push({ taskId, reason: "parked" });
            break;
          }
          const budget = this.budget(swarm);
          if (budget !== null) {
            const worst = this.worstCase(swarm, taskId, model);
            const others = this.committed(taskId);
            if (!fitsBudget(budget, others, worst)) {
              if (this.reservedInFlight(taskId)) {
                // Others' reservations may settle below their worst case: wait for them, out of the window.
                this.sql.exec("UPDATE tasks SET state = 'pending', deadline = NULL, reserved_usd = 0, reserved_tokens = 0 WHERE id = ?", taskId);
                response.refused.push({ taskId, reason: "parked" });
              } else {
                this.exhaustBudget(toBudgetReason(budget, this.charged(), worst), now, taskId);
                response.refused.push({ taskId, reason: "done" });
                ended = true;
              }
              break;
            }
            this.sql.exec("UPDATE tasks SET reserved_usd = ?, reserved_tokens = ? WHERE id = ?", worst.usd, worst.tokens, taskId);
          }
          promptChars += size;
          const timeoutS = toCallTimeoutS(task, config.limits);
          // A sub-agent's lease covers every turn of its loop, each with its tool calls.
          const turns = task?.kind === "task" ? this.callsPerTask(swarm) : 1;
          const toolMs = task?.kind === "task" && config.tools.length > 0 ? this.settings.toolTurnLeaseMs : 0;
          const leaseUntil = now + waves * turns * (timeoutS * 1_000 + toolMs) + this.settings.leaseGraceMs;
          const row = this.sql
            .exec<{ prompt: string; checkpoint: string | null; override: string | null }>(
              `UPDATE tasks SET state = 'running', attempts = ?, deadline = ?, retry_at = NULL, model = ?,
                 started_at = COALESCE(started_at, ?) WHERE id = ? RETURNING prompt, checkpoint, override`,
              decision.attempt,
              leaseUntil,
              model,
              now,
              taskId,
            )
            .one();
          response.granted.push({
            taskId,
            attempt: decision.attempt,
            prompt: row.prompt,
            leaseUntil,
            model,
            timeoutS,
            kind: task?.kind ?? "task",
            override: row.override === null ? null : OverrideSchema.parse(JSON.parse(row.override)),
            checkpoint: row.checkpoint === null ? null : CheckpointSchema.parse(JSON.parse(row.checkpoint)),
          });
          break;
        }
        case "fail":
          this.endTask(taskId, "failed", now, { errorClass: decision.errorClass, message: decision.message });
          response.refused.push({ taskId, reason: "done" });
          ended = true;
          break;
        case "refuse":
          response.refused.push({ taskId, reason: decision.reason });
          break;
      }
    }
    if (ended) await this.afterTasksEnded();
    await this.scheduleAlarm();
    return response;
  }

  /** Records outcomes and usage; idempotent by task and attempt (and by call id for usage). */
  async recordResults(reports: TaskReport[]): Promise<RecordResponse> {
    const swarm = this.swarm();
    if (swarm === null) return { actions: reports.map((r) => ({ taskId: r.taskId, action: "ack", delaySeconds: 0 })) };
    const limits = this.limits(swarm);
    const now = Date.now();
    const actions: TaskAction[] = [];
    const budget = limits.retry_budget ?? defaultRetryBudget(swarm.task_count);
    let retriesUsed = swarm.retries_used;
    let { successes, rateLimited } = this.insertCalls(swarm, reports, now);
    // Before the outcomes: a retried or deferred attempt hands its checkpoint to the next one.
    for (const report of reports) {
      if (report.checkpoint !== undefined) this.saveCheckpoint(report.taskId, report.attempt, report.checkpoint);
      if (report.toolCalls !== undefined && report.toolCalls > 0) {
        this.sql.exec("UPDATE tasks SET tool_calls = MAX(tool_calls, ?) WHERE id = ?", report.toolCalls, report.taskId);
      }
    }
    for (const report of reports) {
      const task = this.task(report.taskId);
      const decision = decideRecord(task && this.toLifeRow(task), report.attempt, report.outcome, limits.max_attempts);
      const { outcome } = report;
      if (decision.kind === "succeed" && outcome.kind === "succeeded") {
        this.endTask(report.taskId, "succeeded", now, { output: outcome.output, finishReason: outcome.finishReason });
      } else if (decision.kind === "fail" && outcome.kind === "failed") {
        this.endTask(report.taskId, "failed", now, { errorClass: outcome.class, message: outcome.message, output: outcome.output ?? null });
      } else if (decision.kind === "defer" && outcome.kind === "deferred") {
        // No key had room (or, mid-loop, no time was left): like a 429, the upstream allows fewer
        // calls than the window sends.
        rateLimited = true;
        // An attempt that made no call is handed back. One that did (an agent deferred after some
        // turns) keeps its number: its call ids are taken, and the next attempt resumes from the
        // checkpoint under a new number, so no call id is ever used twice.
        const called = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE task_id = ? AND attempt = ?", report.taskId, report.attempt).one().n > 0;
        const retryAt = now + Math.max(0, outcome.retryAfterMs);
        this.sql.exec(
          `UPDATE tasks SET state = 'retry_wait', attempts = attempts - ?, retry_at = ?, deadline = ? WHERE id = ?`,
          called ? 0 : 1,
          retryAt,
          this.retryDeadline(retryAt, task, limits),
          report.taskId,
        );
        actions.push({ taskId: report.taskId, action: "retry", delaySeconds: toQueueDelaySeconds(retryAt - now) });
        continue;
      } else if (decision.kind === "retry" && outcome.kind === "failed" && task !== null) {
        if (swarm.state === "cancelled") {
          this.endTask(report.taskId, "cancelled", now, { errorClass: outcome.class, message: `cancelled while waiting to retry: ${outcome.message}` });
        } else if (task.state !== "retry_wait" && retriesUsed >= budget) {
          this.endTask(report.taskId, "failed", now, {
            errorClass: outcome.class,
            message: `${outcome.message} (not retried: the swarm's retry budget of ${budget} is spent)`,
          });
        } else {
          if (task.state !== "retry_wait") retriesUsed += 1;
          const retryAt =
            task.state === "retry_wait" && task.retry_at !== null
              ? task.retry_at
              : now + backoffDelayMs(report.attempt, outcome.retryAfterMs);
          this.sql.exec(
            `UPDATE tasks SET state = 'retry_wait', retry_at = ?, deadline = ?, error_class = ?, error_message = ? WHERE id = ?`,
            retryAt,
            this.retryDeadline(retryAt, task, limits),
            outcome.class,
            outcome.message,
            report.taskId,
          );
          actions.push({ taskId: report.taskId, action: "retry", delaySeconds: toQueueDelaySeconds(retryAt - now) });
          continue;
        }
      }
      actions.push({ taskId: report.taskId, action: "ack", delaySeconds: 0 });
    }
    this.sql.exec("UPDATE swarm SET retries_used = ?", retriesUsed);
    this.adaptWindow({ successes, rateLimited, now });
    await this.afterTasksEnded();
    await this.scheduleAlarm();
    return { actions };
  }

  /**
   * Records calls as soon as they end, before their task's outcome is known, so a consumer that dies
   * mid-batch loses no usage the upstream billed. Idempotent by call id; changes no task state (the
   * outcome comes later with recordResults, whose repeated call rows are then ignored).
   */
  async recordCalls(reports: CallsReport[]): Promise<void> {
    const swarm = this.swarm();
    if (swarm === null) return;
    const now = Date.now();
    this.adaptWindow({ ...this.insertCalls(swarm, reports, now), now });
    for (const report of reports) {
      if (report.checkpoint !== undefined) this.saveCheckpoint(report.taskId, report.attempt, report.checkpoint);
    }
    await this.scheduleAlarm();
  }

  /**
   * A shared key/value scratchpad for the swarm's agents (the scratchpad_* tools). Values are text;
   * a put replaces. Bounded: SCRATCHPAD_LIMITS (src/core/scratchpad.ts).
   */
  async scratchpad(request: ScratchpadRequest): Promise<ScratchpadResponse> {
    if (this.swarm() === null) return { ok: false, error: "the swarm does not exist" };
    return runScratchpad(this.sql, request, Date.now());
  }

  /** A goal's plan in full (status shows its size only). null when the swarm is not the tenant's. */
  async getPlan(tenant: string): Promise<(PlanView & { tasks: { id: string; prompt: string }[] }) | null> {
    const swarm = this.swarm();
    if (swarm === null || swarm.tenant !== tenant) return null;
    const view = planView(swarm);
    if (view === null) return null;
    const tasks = this.sql.exec<{ id: string; prompt: string }>("SELECT id, prompt FROM tasks WHERE kind = 'task' ORDER BY seq").toArray();
    return { ...view, tasks };
  }

  /** The queue gave up on these tasks' message: each still-open task ends failed, unless a live lease owns it. */
  async recordDeadLetter(taskIds: string[]): Promise<void> {
    if (this.swarm() === null) return;
    const now = Date.now();
    for (const taskId of new Set(taskIds)) {
      const task = this.task(taskId);
      if (task === null || isTerminal(task.state)) continue;
      if (task.state === "running" && task.deadline !== null && task.deadline > now) continue;
      this.endTask(taskId, "failed", now, {
        errorClass: "dead_letter",
        message: `the task queue gave up delivering this task after ${task.attempts} attempt(s)`,
      });
    }
    await this.afterTasksEnded();
    await this.scheduleAlarm();
  }

  /**
   * Stops dispatch at once and ends every task that is not running `cancelled`; running tasks finish
   * and are recorded (their calls are paid for). null when the swarm is not the tenant's.
   */
  async cancel(tenant: string): Promise<{ status: SwarmStatusWire; changed: boolean } | null> {
    const swarm = this.swarm();
    if (swarm === null || swarm.tenant !== tenant) return null;
    if (swarm.finished_at !== null || swarm.state === "cancelled") return { status: this.toStatus(swarm), changed: false };
    const now = Date.now();
    this.sql.exec("UPDATE swarm SET state = 'cancelled', reason = 'cancelled by request', index_dirty = 1");
    this.sql.exec(
      `UPDATE tasks SET state = 'cancelled', deadline = NULL, retry_at = NULL, finished_at = ?
       WHERE state IN ('pending', 'dispatched', 'retry_wait')`,
      now,
    );
    await this.afterTasksEnded();
    await this.scheduleAlarm();
    const after = this.swarm();
    return after === null ? null : { status: this.toStatus(after), changed: true };
  }

  // ── Alarm: lease and delivery deadlines, window refill, ledger flush ─────────────────────────

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const swarm = this.swarm();
    if (swarm === null) return;
    const now = Date.now();
    const limits = this.limits(swarm);
    const overdue = this.sql
      .exec<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE deadline IS NOT NULL AND deadline <= ? ORDER BY seq`, now)
      .toArray();
    const resend: string[] = [];
    for (const task of overdue) {
      if (swarm.state === "cancelled") {
        this.endTask(task.id, "cancelled", now, { errorClass: "lease_expired", message: "the swarm was cancelled and no outcome arrived within the lease" });
      } else if (task.state === "running" && task.attempts >= limits.max_attempts) {
        this.endTask(task.id, "failed", now, {
          errorClass: "lease_expired",
          message: `no outcome was reported within the lease of attempt ${task.attempts} of ${limits.max_attempts}`,
        });
      } else {
        resend.push(task.id);
      }
    }
    if (resend.length > 0) {
      this.markDispatched(resend, now);
      await this.send(resend);
    }
    await this.afterTasksEnded();
    try {
      await this.flush();
    } catch (error) {
      console.error(`swarm ${swarm.id}: ledger flush failed, retrying in ${FLUSH_RETRY_MS} ms`, error);
      await this.setAlarmNoLaterThan(Date.now() + FLUSH_RETRY_MS);
    }
    await this.scheduleAlarm();
  }

  // ── internals ─────────────────────────────────────────────────────────────────────────────

  private mix(swarm: SwarmRow): WeightedModel[] {
    return swarm.model_mix === null ? [{ model: swarm.model, weight: 1 }] : WeightedModelsSchema.parse(JSON.parse(swarm.model_mix));
  }

  /**
   * The models a task may call, in order: its model of the mix (or, once the budget runs low, the
   * cheapest models of the budget's fallback tier), then the fallbacks. Without a task: all of them.
   */
  private models(swarm: SwarmRow, taskId?: string, knownHint?: string | null): string[] {
    const fallback = swarm.fallback === null ? [] : z.array(z.string()).parse(JSON.parse(swarm.fallback));
    const mix = this.mix(swarm);
    const tier = this.tierModels(swarm);
    const lowBudget = tier.length > 0 && this.budgetRunningLow(swarm);
    const hint = taskId === undefined ? null : (knownHint === undefined ? this.modelHint(taskId) : knownHint);
    const primary =
      taskId === undefined ? [...mix.map((m) => m.model), ...engineModels({ goal: swarm.goal, plannerModel: plannerOf(swarm)?.model, reduce: reduceSpecOf(swarm) }, firstModel(swarm)), ...tier] : hint !== null ? [hint] : lowBudget ? tier : [this.primaryModel(swarm, taskId, null)];
    return [...new Set([...primary, ...fallback])];
  }

  /** The model a task is routed to first: its model of the mix, or the cheapest of the fallback tier on a low budget. */
  private primaryModel(swarm: SwarmRow, taskId: string, knownHint?: string | null): string {
    const hint = knownHint === undefined ? this.modelHint(taskId) : knownHint;
    if (hint !== null) return hint;
    const tier = this.tierModels(swarm);
    if (tier.length > 0 && tier[0] !== undefined && this.budgetRunningLow(swarm)) return tier[0];
    return assignModel(this.mix(swarm), swarm.id, taskId);
  }

  /** An engine task's own model (the planner's, the reducer's); null for a sub-task. */
  private modelHint(taskId: string): string | null {
    return this.sql.exec<{ m: string | null }>("SELECT model_hint AS m FROM tasks WHERE id = ?", taskId).toArray()[0]?.m ?? null;
  }

  /** The gateway's models of the budget's fallback tier, cheapest output first. */
  private tierModels(swarm: SwarmRow): string[] {
    const tier = this.budget(swarm)?.fallback_tier;
    const gateway = this.settings.gateway;
    if (tier === undefined || gateway === null) return [];
    const price = (m: string) => resolvePrice(this.settings.prices, m)?.output ?? Number.POSITIVE_INFINITY;
    return Object.entries(gateway.models)
      .filter(([, model]) => model.tier === tier)
      .map(([name]) => name)
      .sort((a, b) => price(a) - price(b));
  }

  /**
   * Less than `fallback_at` of the budget is left after what was really spent (USD when capped in
   * USD, else tokens). Reservations don't count here: a full window reserves most of a small budget
   * at once, which says nothing about the spend.
   */
  private budgetRunningLow(swarm: SwarmRow): boolean {
    const budget = this.budget(swarm);
    if (budget === null) return false;
    const charged = this.charged();
    if (budget.max_usd !== undefined) return budget.max_usd - charged.usd < budget.fallback_at * budget.max_usd;
    if (budget.max_tokens !== undefined) return budget.max_tokens - charged.tokens < budget.fallback_at * budget.max_tokens;
    return false;
  }

  private circuit(model: string): Circuit {
    const row = this.sql.exec<CircuitRow>("SELECT * FROM circuits WHERE model = ?", model).toArray()[0];
    if (row === undefined) return CLOSED_CIRCUIT;
    return { state: row.state, failures: row.failures, firstFailureAt: row.first_failure_at, openedAt: row.opened_at, probes: row.probes };
  }

  private saveCircuit(model: string, circuit: Circuit): void {
    this.sql.exec(
      `INSERT INTO circuits (model, state, failures, first_failure_at, opened_at, probes) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (model) DO UPDATE SET state = excluded.state, failures = excluded.failures,
         first_failure_at = excluded.first_failure_at, opened_at = excluded.opened_at, probes = excluded.probes`,
      model,
      circuit.state,
      circuit.failures,
      circuit.firstFailureAt,
      circuit.openedAt,
      circuit.probes,
    );
  }

  private updateCircuit(model: string, outcome: "success" | "failure", now: number): void {
    const before = this.circuit(model);
    const after = recordCircuitOutcome(before, outcome, now);
    if (after.state === "open" && before.state !== "open") {
      console.warn(JSON.stringify({ event: "circuit_open", model, failures: after.failures }));
    }
    this.saveCircuit(model, after);
  }

  /**
   * The first model, in the spec's order (model, then fallback), whose circuit lets a call through
   * now; null when every circuit is open. With `probe` (a claim) a half-open circuit's probe is used up.
   */
  private pickModel(swarm: SwarmRow, now: number, options: { probe: boolean; taskId?: string; hint?: string | null } = { probe: true }): string | null {
    for (const model of this.models(swarm, options.taskId, options.hint)) {
      const { allowed, circuit } = acquireCircuit(this.circuit(model), now);
      if (!allowed) continue;
      if (options.probe) this.saveCircuit(model, circuit);
      return model;
    }
    return null;
  }

  /** When the first open circuit half-opens, if every circuit is open now; else null. */
  private parkedUntil(): number | null {
    const swarm = this.swarm();
    if (swarm === null || swarm.finished_at !== null || swarm.state === "cancelled") return null;
    const now = Date.now();
    if (this.pickModel(swarm, now, { probe: false }) !== null) return null;
    const times = this.models(swarm)
      .map((model) => toHalfOpenAt(toCurrentCircuit(this.circuit(model), now)))
      .filter((t): t is number => t !== null);
    return times.length === 0 ? null : Math.min(...times);
  }

  /** Why the swarm is where it is: its stored end reason, or that it waits for a circuit to half-open. */
  private reason(swarm: SwarmRow): string | null {
    if (swarm.reason !== null) return swarm.reason;
    const until = this.parkedUntil();
    if (until === null) return null;
    return `every model's circuit is open (${this.models(swarm).join(", ")}): tasks wait until ${new Date(until).toISOString()}`;
  }

  private circuitViews(swarm: SwarmRow): CircuitView[] {
    const now = Date.now();
    return this.models(swarm).map((model) => {
      const circuit = toCurrentCircuit(this.circuit(model), now);
      const at = toHalfOpenAt(circuit);
      return { model, state: circuit.state, failures: circuit.failures, retry_at: at === null ? null : new Date(at).toISOString() };
    });
  }

  /** A task waiting to retry whose message has not come back by then is sent again by the alarm. */
  private retryDeadline(retryAt: number, task: TaskRow | null, limits: Limits): number {
    return retryAt + toCallTimeoutS(task, limits) * 1_000 + this.settings.leaseGraceMs;
  }

  private swarm(): SwarmRow | null {
    return this.sql.exec<SwarmRow>("SELECT * FROM swarm LIMIT 1").toArray()[0] ?? null;
  }

  private task(taskId: string): TaskRow | null {
    return (
      this.sql.exec<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = ?`, taskId).toArray()[0] ?? null
    );
  }

  private toLifeRow(task: TaskRow): TaskLifeRow {
    return { state: task.state, attempts: task.attempts, leaseUntil: task.state === "running" ? task.deadline : null };
  }

  private limits(swarm: SwarmRow): Limits {
    return LimitsSchema.parse(JSON.parse(swarm.limits));
  }

  /** The swarm's run settings. They are fixed when it starts, so they are parsed once per instance. */
  private toRunConfig(swarm: SwarmRow): TaskRunConfig {
    if (this.runConfig !== null) return this.runConfig;
    const responseFormat: ResponseFormat | null =
      swarm.response_format === null ? null : ResponseFormatSchema.parse(JSON.parse(swarm.response_format));
    return (this.runConfig = {
      swarmId: swarm.id,
      tenant: swarm.tenant,
      model: swarm.model,
      system: swarm.system,
      limits: this.limits(swarm),
      responseFormat,
      tools: swarm.tools === null ? [] : toToolWires(z.array(ToolSpecSchema).parse(JSON.parse(swarm.tools))),
      httpAllowlist: swarm.http_allowlist === null ? [] : z.array(z.string()).parse(JSON.parse(swarm.http_allowlist)),
      parallelToolCalls: swarm.parallel_tool_calls === null ? null : swarm.parallel_tool_calls === 1,
    });
  }

  /** Model calls one attempt of a sub-task may make: its agent loop's turns and a repair turn. */
  private callsPerTask(swarm: SwarmRow): number {
    const config = this.toRunConfig(swarm);
    return callsPerAttempt({ tools: config.tools, response_format: config.responseFormat, limits: config.limits });
  }

  /**
   * Inserts the reports' call rows. Only a call seen for the first time moves its model's breaker
   * and counts for the window; returns those counts.
   */
  private insertCalls(swarm: SwarmRow, reports: readonly { taskId: string; attempt: number; calls: CallRecord[] }[], now: number): { successes: number; rateLimited: boolean } {
    let successes = 0;
    let rateLimited = false;
    // A sub-task reserves its whole attempt (every turn); one call is charged at most its share.
    const callsPerTask = this.callsPerTask(swarm);
    for (const report of reports) {
      for (const call of report.calls) {
        if (!this.insertCall(swarm, report, call, callsPerTask)) continue;
        if (call.status === "ok") {
          successes += 1;
          this.updateCircuit(call.model, "success", now);
        } else if (call.errorClass !== null && isUpstreamHealthFailure(call.errorClass)) {
          this.updateCircuit(call.model, "failure", now);
        }
        if (call.errorClass === "rate_limited") rateLimited = true;
      }
    }
    return { successes, rateLimited };
  }

  /** One round of outcomes moves the adaptive window. */
  private adaptWindow(events: { successes: number; rateLimited: boolean; now: number }): void {
    const swarm = this.swarm();
    if (swarm === null) return;
    const window = adjustWindow(
      { window: swarm.window, credit: swarm.window_credit, decreasedAt: swarm.window_decreased_at },
      events,
      this.limits(swarm).concurrency,
    );
    this.sql.exec("UPDATE swarm SET window = ?, window_credit = ?, window_decreased_at = ?", window.window, window.credit, window.decreasedAt);
  }

  /** Inserts the call's ledger row; false when its call id was already recorded. */
  private insertCall(swarm: SwarmRow, report: { taskId: string; attempt: number }, call: CallRecord, callsPerTask: number): boolean {
    const usage = call.usage;
    const price = resolvePrice(this.settings.prices, call.model);
    const cost = usage !== null && price !== null ? costOfUsage(usage, price) : null;
    const row = this.sql
      .exec<{ usd: number; tokens: number; kind: TaskKind }>("SELECT reserved_usd AS usd, reserved_tokens AS tokens, kind FROM tasks WHERE id = ?", report.taskId)
      .toArray()[0];
    const share = row?.kind === "task" ? callsPerTask : 1;
    const reservation = row === undefined ? { usd: 0, tokens: 0 } : { usd: row.usd / share, tokens: Math.ceil(row.tokens / share) };
    const charge = chargeOfCall(call, price, reservation);
    const cursor = this.sql.exec(
      `INSERT OR IGNORE INTO calls (call_id, task_id, attempt, turn, model, status, error_class, prompt_tokens, cached_tokens,
         completion_tokens, reasoning_tokens, total_tokens, cost_usd, latency_ms, created_at, charged_usd, charged_tokens)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      toCallId(swarm.id, report.taskId, report.attempt, call.turn),
      report.taskId,
      report.attempt,
      call.turn,
      call.model,
      call.status,
      call.errorClass,
      usage?.prompt_tokens ?? null,
      usage?.cached_tokens ?? null,
      usage?.completion_tokens ?? null,
      usage?.reasoning_tokens ?? null,
      usage?.total_tokens ?? null,
      cost,
      Math.max(0, Math.round(call.latencyMs)),
      call.startedAt,
      charge.usd,
      charge.tokens,
    );
    return cursor.rowsWritten > 0;
  }

  /** Keeps a multi-turn task's latest checkpoint, from the attempt that holds it only. */
  private saveCheckpoint(taskId: string, attempt: number, checkpoint: AgentCheckpoint): void {
    const json = JSON.stringify(checkpoint);
    // A row holds at most 2 MB in Durable Object SQLite ("Maximum string, BLOB or table row size",
    // developers.cloudflare.com/durable-objects/platform/limits), with the task's prompt and output
    // beside it. A larger conversation keeps its previous checkpoint: a redelivery then repeats
    // the turns since, which is paid again but never wrong.
    if (json.length * 3 > CHECKPOINT_MAX_BYTES && new TextEncoder().encode(json).length > CHECKPOINT_MAX_BYTES) {
      console.warn(JSON.stringify({ event: "checkpoint_too_large", task_id: taskId, attempt, turns: checkpoint.turns, chars: json.length }));
      this.sql.exec("UPDATE tasks SET tool_calls = MAX(tool_calls, ?) WHERE id = ? AND state = 'running' AND attempts = ?", checkpoint.toolCalls, taskId, attempt);
      return;
    }
    this.sql.exec(
      `UPDATE tasks SET checkpoint = ?, tool_calls = MAX(tool_calls, ?) WHERE id = ? AND state = 'running' AND attempts = ?
         AND (checkpoint IS NULL OR json_extract(checkpoint, '$.step') < ?)`,
      json,
      checkpoint.toolCalls,
      taskId,
      attempt,
      checkpoint.step,
    );
  }

  private endTask(
    taskId: string,
    state: "succeeded" | "failed" | "cancelled",
    now: number,
    detail: { output: string; finishReason: string | null } | { errorClass: ErrorClass; message: string; output?: string | null },
  ): void {
    if ("finishReason" in detail) {
      this.sql.exec(
        `UPDATE tasks SET state = ?, output = ?, finish_reason = ?, error_class = NULL, error_message = NULL,
           deadline = NULL, retry_at = NULL, reserved_usd = 0, reserved_tokens = 0, checkpoint = NULL, finished_at = ? WHERE id = ?`,
        state,
        detail.output,
        detail.finishReason,
        now,
        taskId,
      );
    } else {
      // A failed task keeps its raw answer when it had one (invalid_output).
      this.sql.exec(
        `UPDATE tasks SET state = ?, error_class = ?, error_message = ?, output = COALESCE(?, output), deadline = NULL, retry_at = NULL,
           reserved_usd = 0, reserved_tokens = 0, checkpoint = NULL, finished_at = ? WHERE id = ?`,
        state,
        detail.errorClass,
        detail.message,
        detail.output ?? null,
        now,
        taskId,
      );
    }
  }

  private counts(): TaskCounts {
    const counts: TaskCounts = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, skipped_budget: 0 };
    for (const row of this.sql.exec<{ state: TaskState; n: number }>("SELECT state, COUNT(*) AS n FROM tasks WHERE kind = 'task' GROUP BY state")) {
      switch (row.state) {
        case "pending":
        case "dispatched":
        case "retry_wait":
          counts.queued += row.n;
          break;
        case "running":
          counts.running += row.n;
          break;
        default:
          counts[row.state] += row.n;
      }
    }
    return counts;
  }

  /**
   * After outcomes land: move the swarm through its phases (planning → running → reducing), refill
   * the window, and finish the swarm when nothing is left open.
   */
  private async afterTasksEnded(): Promise<void> {
    const before = this.swarm();
    if (before === null || before.finished_at !== null) return;
    advancePhase(this.phaseRoom(), before);
    await this.dispatch();
    // Read again: dispatch may have spent the budget, and other calls ran while it awaited the queue.
    const swarm = this.swarm();
    if (swarm === null || swarm.finished_at !== null) return;
    const open = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state IN ('pending', 'dispatched', 'running', 'retry_wait')").one().n;
    const counts = this.counts();
    let state = open > 0 ? null : decideCompletion(counts, swarm.state === "cancelled");
    if (state === null) {
      this.sql.exec("UPDATE swarm SET index_dirty = 1");
      return;
    }
    // Plan and reduce tasks ended too: a swarm whose plan or final reduction failed says so.
    const failedPhase = phaseFailure(swarm);
    if (failedPhase !== null && state !== "cancelled") state = failedPhase;
    const reason =
      swarm.reason ??
      (state === "completed_with_failures"
        ? `${counts.failed} task(s) failed${counts.skipped_budget > 0 ? `, ${counts.skipped_budget} skipped (budget)` : ""}`
        : null);
    this.sql.exec("UPDATE swarm SET state = ?, finished_at = ?, reason = ?, index_dirty = 1", state, Date.now(), reason);
    // The final row reaches D1 on the next alarm, right away.
    await this.setAlarmNoLaterThan(Date.now());
  }

  /** Windowed dispatch: keeps at most W tasks in flight, releasing pending ones in task order. */
  private async dispatch(): Promise<void> {
    const swarm = this.swarm();
    // Planning and reducing dispatch their engine tasks the same way.
    if (swarm === null || (swarm.state !== "running" && swarm.state !== "planning" && swarm.state !== "reducing")) return;
    const inFlight = this.sql
      .exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state IN ('dispatched', 'running', 'retry_wait')")
      .one().n;
    const room = swarm.window - inFlight;
    if (room <= 0) return;
    // Every circuit is open: nothing is dispatched until one half-opens (the alarm wakes us).
    if (this.pickModel(swarm, Date.now(), { probe: false }) === null) return;
    const candidates = this.sql
      .exec<{ id: string }>("SELECT id FROM tasks WHERE state = 'pending' ORDER BY seq LIMIT ?", room)
      .toArray()
      .map((row) => row.id);
    const ids = this.reserveBudget(swarm, candidates, inFlight);
    if (ids.length === 0) return;
    this.markDispatched(ids, Date.now());
    await this.send(ids);
  }

  /**
   * The prefix of `candidates` whose worst cases fit the budget, each reserved as it enters the
   * window. When not even the first fits with nothing in flight, the budget is spent: the swarm
   * stops and every open task ends `skipped_budget`.
   */
  private reserveBudget(swarm: SwarmRow, candidates: string[], inFlight: number): string[] {
    const budget = this.budget(swarm);
    if (budget === null) return candidates;
    const released: string[] = [];
    const committed = this.committed();
    for (const taskId of candidates) {
      const worst = this.worstCase(swarm, taskId, this.primaryModel(swarm, taskId));
      if (!fitsBudget(budget, committed, worst)) {
        if (inFlight === 0 && released.length === 0) this.exhaustBudget(toBudgetReason(budget, this.charged(), worst), Date.now());
        break;
      }
      this.sql.exec("UPDATE tasks SET reserved_usd = ?, reserved_tokens = ? WHERE id = ?", worst.usd, worst.tokens, taskId);
      committed.usd += worst.usd;
      committed.tokens += worst.tokens;
      released.push(taskId);
    }
    return released;
  }

  private budgetView(swarm: SwarmRow): BudgetView | null {
    const budget = this.budget(swarm);
    if (budget === null) return null;
    const charged = this.charged();
    const committed = this.committed();
    return {
      max_usd: budget.max_usd ?? null,
      max_tokens: budget.max_tokens ?? null,
      charged_usd: charged.usd,
      charged_tokens: charged.tokens,
      reserved_usd: committed.usd - charged.usd,
      reserved_tokens: committed.tokens - charged.tokens,
      fallback_tier: budget.fallback_tier ?? null,
      routing_to_fallback_tier: this.tierModels(swarm).length > 0 && this.budgetRunningLow(swarm),
    };
  }

  private tenantBudget(tenant: string, month: string): DurableObjectStub<TenantBudget> {
    const namespace = this.env.TENANT_BUDGET;
    if (namespace === undefined) throw new Error("TENANT_BUDGET is not bound");
    return namespace.get(namespace.idFromName(`${tenant}:${month}`));
  }

  /**
   * The most a whole swarm can cost (every task's worst call on its priciest model, max_attempts
   * times), and the worst case of its first call.
   */
  private worstCaseOfSwarm(input: StartSwarmInput, mixModels: string[]): Amount & { oneCall: Amount } {
    const models = [...mixModels, ...(input.spec.fallback ?? []), ...engineModels({ goal: input.spec.goal, plannerModel: input.spec.planner?.model, reduce: input.spec.reduce }, mixModels[0] ?? "")];
    const prices = models.map((m) => resolvePrice(this.settings.prices, m)).filter((p): p is ModelPrice => p !== null);
    const priciest = prices.reduce<ModelPrice | null>((top, p) => (top === null || p.output + p.input > top.output + top.input ? p : top), null);
    const encoder = new TextEncoder();
    const systemBytes = input.spec.system === undefined ? 0 : encoder.encode(input.spec.system).length;
    const { max_output_tokens, max_attempts } = input.spec.limits;
    const turns = callsPerAttempt(input.spec);
    const total = { usd: 0, tokens: 0, oneCall: { usd: 0, tokens: 0 } };
    const add = (promptBytes: number, outputTokens: number, calls: number): Amount => {
      const worst = worstCaseCall(promptBytes, outputTokens, priciest);
      total.usd += worst.usd * calls;
      total.tokens += worst.tokens * calls;
      return worst;
    };
    /** A sub-task: `max_attempts` attempts of its whole agent loop; returns one attempt's worst case. */
    const addAttempts = (promptBytes: number, outputTokens: number, calls: number, attempts: number): Amount => {
      const worst = worstCaseAttempt(promptBytes, outputTokens, calls, priciest);
      total.usd += worst.usd * attempts;
      total.tokens += worst.tokens * attempts;
      return worst;
    };
    // A goal's tasks are not known yet: every one of max_tasks at the largest prompt a plan may hold
    // (3 UTF-8 bytes a character covers every script but emoji), plus the planner's own calls.
    const prompts =
      input.spec.goal === undefined
        ? input.tasks.map((task) => encoder.encode(task.prompt).length)
        : new Array<number>(PlannerSpecSchema.parse(input.spec.planner ?? {}).max_tasks).fill(PLAN_MAX_PROMPT_CHARS * 3);
    if (input.spec.goal !== undefined) {
      const planner = PlannerSpecSchema.parse(input.spec.planner ?? {});
      total.oneCall = add(encoder.encode(input.spec.goal).length + 4_000, plannerOutputTokens(planner, max_output_tokens), PLAN_ATTEMPTS * max_attempts);
    }
    prompts.forEach((bytes, i) => {
      // A multi-turn task's context grows by each turn's answer and tool results.
      const worst = addAttempts(bytes + systemBytes, max_output_tokens, turns, max_attempts);
      if (i === 0 && input.spec.goal === undefined) total.oneCall = worst;
    });
    if (input.spec.reduce?.kind === "llm") {
      // Each level at least halves the inputs, so all levels together take fewer calls than the tasks.
      const context = reducerContextTokens(input.spec.reduce, reducerModel(input.spec.reduce, mixModels[0] ?? ""), this.gatewayContext);
      add(context, input.spec.reduce.max_output_tokens, Math.max(1, prompts.length) * max_attempts);
    }
    return total;
  }

  private budget(swarm: SwarmRow): Budget | null {
    return swarm.budget === null ? null : BudgetSchema.parse(JSON.parse(swarm.budget));
  }

  /**
   * The most one attempt of this task can cost on `model`: one call for an engine task; for a
   * sub-agent, every turn of its loop, each with the context grown by the turns before it.
   */
  private worstCase(swarm: SwarmRow, taskId: string, model: string): Amount {
    const row = this.sql
      .exec<{ n: number; override: string | null; kind: TaskKind }>("SELECT LENGTH(CAST(prompt AS BLOB)) AS n, override, kind FROM tasks WHERE id = ?", taskId)
      .one();
    const price = resolvePrice(this.settings.prices, model);
    const encoder = new TextEncoder();
    if (row.override !== null) {
      const override = OverrideSchema.parse(JSON.parse(row.override));
      return worstCaseCall(row.n + encoder.encode(override.system).length, override.maxOutputTokens, price);
    }
    const systemBytes = swarm.system === null ? 0 : encoder.encode(swarm.system).length;
    return worstCaseAttempt(row.n + systemBytes, this.toRunConfig(swarm).limits.max_output_tokens, this.callsPerTask(swarm), price);
  }

  /** What recorded calls count against the budget. */
  private charged(): Amount {
    const row = this.sql.exec<{ usd: number | null; tokens: number | null }>("SELECT SUM(charged_usd) AS usd, SUM(charged_tokens) AS tokens FROM calls").one();
    return { usd: row.usd ?? 0, tokens: row.tokens ?? 0 };
  }

  /** Charged plus every open reservation (optionally leaving one task's own out). */
  private committed(exceptTaskId?: string): Amount {
    const charged = this.charged();
    const reserved = this.sql
      .exec<{ usd: number | null; tokens: number | null }>(
        `SELECT SUM(reserved_usd) AS usd, SUM(reserved_tokens) AS tokens FROM tasks
         WHERE state IN ('dispatched', 'running', 'retry_wait') AND id != ?`,
        exceptTaskId ?? "",
      )
      .one();
    return { usd: charged.usd + (reserved.usd ?? 0), tokens: charged.tokens + (reserved.tokens ?? 0) };
  }

  private reservedInFlight(exceptTaskId: string): boolean {
    return (
      this.sql
        .exec<{ n: number }>(
          "SELECT COUNT(*) AS n FROM tasks WHERE state IN ('dispatched', 'running', 'retry_wait') AND id != ? AND (reserved_usd > 0 OR reserved_tokens > 0)",
          exceptTaskId,
        )
        .one().n > 0
    );
  }

  /** The budget cannot cover another call: dispatch stops, running calls finish, the rest are skipped. */
  private exhaustBudget(reason: string, now: number, alsoTaskId?: string): void {
    this.sql.exec(
      `UPDATE tasks SET state = 'skipped_budget', deadline = NULL, retry_at = NULL, reserved_usd = 0, reserved_tokens = 0, finished_at = ?
       WHERE state IN ('pending', 'dispatched', 'retry_wait') OR id = ?`,
      now,
      alsoTaskId ?? "",
    );
    this.sql.exec("UPDATE swarm SET reason = ?, index_dirty = 1", reason);
    console.warn(JSON.stringify({ event: "budget_exhausted", reason }));
  }

  private markDispatched(taskIds: readonly string[], now: number): void {
    for (const id of taskIds) {
      this.sql.exec("UPDATE tasks SET state = 'dispatched', deadline = ?, retry_at = NULL WHERE id = ?", now + DISPATCH_DEADLINE_MS, id);
    }
  }

  /**
   * Sends packets of task references. The tasks were marked dispatched before this await, so a
   * concurrent dispatch never sends them twice; a failed send puts them back for the alarm.
   */
  private async send(taskIds: readonly string[]): Promise<void> {
    const swarm = this.swarm();
    if (swarm === null) return;
    const longIds = new Set(
      this.sql
        .exec<{ id: string }>("SELECT id FROM tasks WHERE long = 1 AND state = 'dispatched'")
        .toArray()
        .map((row) => row.id),
    );
    const size = toPacketSize(this.settings.packetSize, swarm.window);
    const short = taskIds.filter((id) => !longIds.has(id));
    const long = taskIds.filter((id) => longIds.has(id));
    await this.sendPackets(swarm, this.env.TASK_QUEUE, toPackets(swarm.id, short, size));
    // Long tasks run in their own pool so they never hold back a batch of short ones.
    await this.sendPackets(swarm, this.env.LONG_TASK_QUEUE ?? this.env.TASK_QUEUE, toPackets(swarm.id, long, 1));
  }

  private async sendPackets(swarm: SwarmRow, queue: Queue, packets: TaskPacket[]): Promise<void> {
    for (const batch of toSendBatches(packets)) {
      try {
        await queue.sendBatch(batch.map((body: TaskPacket) => ({ body })));
      } catch (error) {
        console.error(`swarm ${swarm.id}: queue send failed, the alarm re-sends in 1 s`, error);
        const retryAt = Date.now() + 1_000;
        for (const packet of batch) {
          for (const id of packet.task_ids) {
            this.sql.exec("UPDATE tasks SET deadline = ? WHERE id = ? AND state = 'dispatched'", retryAt, id);
          }
        }
        await this.setAlarmNoLaterThan(retryAt);
      }
    }
  }

  /** Writes unflushed ledger rows and, when changed, the swarm's index row to D1. */
  private async flush(): Promise<void> {
    const swarm = this.swarm();
    if (swarm === null) return;
    if (swarm.finished_at !== null && swarm.tenant_month !== null && swarm.tenant_settled === 0) {
      // The swarm's tenant reservation becomes what it was charged (retried by the alarm on failure).
      const charged = this.charged();
      await this.tenantBudget(swarm.tenant, swarm.tenant_month).settle({ swarmId: swarm.id, usd: charged.usd, tokens: charged.tokens });
      this.sql.exec("UPDATE swarm SET tenant_settled = 1");
    }
    for (;;) {
      const rows = this.sql
        .exec<LedgerRow & { rowid: number }>(
          `SELECT rowid, call_id, task_id, attempt, turn, model, status, error_class, prompt_tokens, cached_tokens,
                  completion_tokens, reasoning_tokens, total_tokens, cost_usd, latency_ms, created_at
           FROM calls WHERE flushed = 0 ORDER BY rowid LIMIT ?`,
          FLUSH_CHUNK,
        )
        .toArray()
        .map((row) => ({ ...row, swarm_id: swarm.id, tenant: swarm.tenant }));
      const current = this.swarm();
      const index = current !== null && current.index_dirty === 1 ? this.toIndexRow(current) : null;
      if (rows.length === 0 && index === null) return;
      await flushToLedger(
        this.env.LEDGER_DB,
        rows.map(({ rowid: _rowid, ...row }) => row),
        index,
      );
      const last = rows[rows.length - 1];
      if (last) this.sql.exec("UPDATE calls SET flushed = 1 WHERE flushed = 0 AND rowid <= ?", last.rowid);
      // Only clear the flag if nothing changed the swarm while the write was in flight.
      if (index !== null) {
        const after = this.swarm();
        if (after !== null && JSON.stringify(this.toIndexRow(after)) === JSON.stringify(index)) {
          this.sql.exec("UPDATE swarm SET index_dirty = 0");
        }
      }
      if (rows.length < FLUSH_CHUNK) return;
    }
  }

  private usageTotals(): UsageTotals & { cost_usd: number } {
    const row = this.sql
      .exec<{ calls: number; p: number | null; c: number | null; o: number | null; t: number | null; cost: number | null }>(
        `SELECT COUNT(*) AS calls, SUM(prompt_tokens) AS p, SUM(cached_tokens) AS c, SUM(completion_tokens) AS o,
                SUM(total_tokens) AS t, SUM(cost_usd) AS cost FROM calls`,
      )
      .one();
    return {
      calls: row.calls,
      prompt_tokens: row.p ?? 0,
      cached_tokens: row.c ?? 0,
      completion_tokens: row.o ?? 0,
      total_tokens: row.t ?? 0,
      cost_usd: row.cost ?? 0,
    };
  }

  private toIndexRow(swarm: SwarmRow): SwarmIndexRow {
    const counts = this.counts();
    const usage = this.usageTotals();
    return {
      id: swarm.id,
      tenant: swarm.tenant,
      name: swarm.name,
      model: swarm.model,
      state: swarm.state,
      task_count: swarm.task_count,
      origin: swarm.origin,
      metadata: swarm.metadata,
      created_at: swarm.created_at,
      finished_at: swarm.finished_at,
      succeeded: counts.succeeded,
      failed: counts.failed,
      cancelled: counts.cancelled,
      skipped_budget: counts.skipped_budget,
      calls: usage.calls,
      prompt_tokens: usage.prompt_tokens,
      cached_tokens: usage.cached_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      cost_usd: usage.cost_usd,
    };
  }

  private toStatus(swarm: SwarmRow): SwarmStatusWire {
    const { cost_usd, ...usage } = this.usageTotals();
    const limits = this.limits(swarm);
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
      latency_ms: this.latencyPercentiles(usage.calls),
      output: finished ? this.output(swarm) : null,
      plan: planView(swarm),
      reduction: reductionView(swarm),
      reduce: { kind: reduceSpecOf(swarm).kind },
      max_window: limits.concurrency,
      retries: { used: swarm.retries_used, budget: limits.retry_budget ?? defaultRetryBudget(swarm.task_count) },
      circuits: this.circuitViews(swarm),
      reason: this.reason(swarm),
      models: this.mix(swarm),
      budget: this.budgetView(swarm),
      metadata,
      created_at: toIso(swarm.created_at) ?? "",
      finished_at: toIso(swarm.finished_at),
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
      limits: (swarm) => this.limits(swarm),
      gatewayContext: this.gatewayContext,
    };
  }

  /** The gateway's context size of a model, when configured. */
  private readonly gatewayContext = (model: string): number | undefined => this.settings.gateway?.models[model]?.context;

  private latencyPercentiles(calls: number): { p50: number | null; p95: number | null } {
    if (this.latencyCache?.calls !== calls) {
      const latencies = this.sql
        .exec<{ latency_ms: number }>("SELECT latency_ms FROM calls")
        .toArray()
        .map((row) => row.latency_ms);
      this.latencyCache = { calls, p50: percentile(latencies, 50), p95: percentile(latencies, 95) };
    }
    return { p50: this.latencyCache.p50, p95: this.latencyCache.p95 };
  }

  /** Succeeded outputs in task order: what the reducers merge. */
  private succeededOutputs(): TaskOutput[] {
    return this.sql
      .exec<{ task_id: string; output: string }>("SELECT id AS task_id, output FROM tasks WHERE kind = 'task' AND state = 'succeeded' ORDER BY seq")
      .toArray();
  }


  /** Keeps one alarm at the earliest moment something is due: a deadline or a ledger flush. */
  private async scheduleAlarm(): Promise<void> {
    const next = this.sql.exec<{ at: number | null }>("SELECT MIN(deadline) AS at FROM tasks WHERE deadline IS NOT NULL").one().at;
    const unflushed = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE flushed = 0").one().n;
    const dirty = this.sql.exec<{ d: number }>("SELECT index_dirty AS d FROM swarm").toArray()[0]?.d === 1;
    const flushAt = unflushed > 0 || dirty ? Date.now() + this.settings.flushMs : null;
    const candidates = [next, flushAt, this.parkedUntil()].filter((t): t is number => t !== null);
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
