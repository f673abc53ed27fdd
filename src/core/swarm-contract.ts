// The SwarmRoom's RPC contract: what the orchestrator and the agent Worker exchange with it.
// Types only, no I/O. Every shape here crosses a Worker boundary by structured clone.
import type { TenantCap } from "./tenant-budget.ts";
import type { ClassifiedError, ErrorClass } from "./error-class.ts";
import type { PinnedMcpServer } from "./mcp-catalog.ts";
import type { BuiltinTool, Limits, PlannedTask, ResponseFormat, SwarmSpec } from "./spec-schema.ts";
import type { ReductionLevel } from "./llm-reduction.ts";
import type { ReducedOutput, ReducedOutputWire, ReduceSpec } from "./reducers.ts";
import type { Usage } from "./usage.ts";

/**
 * pending → dispatched → running → succeeded | failed
 *                ↑          │
 *                └ retry_wait ┘ (retryable failure, attempts left)
 * Any non-terminal task can end cancelled, skipped_budget or skipped (fail fast: limits.stop_after_failures).
 */
export type TaskState = "pending" | "dispatched" | "running" | "retry_wait" | "succeeded" | "failed" | "cancelled" | "skipped_budget" | "skipped";

export const TERMINAL_TASK_STATES: readonly TaskState[] = ["succeeded", "failed", "cancelled", "skipped_budget", "skipped"];
/** Tasks that occupy a place in the swarm's window. */
export const IN_FLIGHT_TASK_STATES: readonly TaskState[] = ["dispatched", "running", "retry_wait"];

export type SwarmState = "planning" | "running" | "reducing" | "completed" | "completed_with_failures" | "failed" | "cancelled";

export type CircuitState = "closed" | "open" | "half_open";

/** A model's circuit breaker in this swarm (status view). */
export interface CircuitView {
  model: string;
  state: CircuitState;
  /** Failures in a row that count towards opening. */
  failures: number;
  /** ISO time the open circuit half-opens; null unless open. */
  retry_at: string | null;
}

export interface StartSwarmInput {
  swarmId: string;
  /** Who owns the swarm: its tenant's id (`tn_…`). */
  tenant: string;
  spec: Omit<SwarmSpec, "tasks">;
  tasks: PlannedTask[];
  /** Epoch ms. */
  createdAt: number;
  origin: { kind: "api" } | { kind: "schedule"; scheduleId: string };
  /**
   * The tenant's monthly cap as the orchestrator read it (the tenant's `monthly_usd` over
   * TENANT_BUDGETS); null = uncapped. Absent: the room reads TENANT_BUDGETS itself.
   */
  tenantCap?: TenantCap | null;
  /** Set for a rerun (POST /v1/swarms/:id/rerun): the swarm it reruns tasks of. */
  parentId?: string;
  /** The spec's MCP servers as read and pinned at submit (src/core/mcp-catalog.ts). */
  mcpCatalog?: PinnedMcpServer[];
  /**
   * A batch's swarm (POST /v1/batches): the R2 key of its input file. Each task's prompt is then
   * the byte range of its line ("offset:length"), which the agent reads and sends as it is.
   */
  batchInput?: string;
  /**
   * What a lane of the tenant's latest swarm of the same model carried, and its calls' mean
   * latency, as its lanes measured them (D1 `swarms`): the room sizes its first lanes on it rather
   * than on the header-bound assumption. Absent for a tenant's first swarm of a model.
   */
  lanePrior?: LanePrior;
}

/** An earlier swarm's measured lanes (StartSwarmInput.lanePrior). */
export interface LanePrior {
  /** Tasks one lane carried at once (its reported slots). */
  slots: number;
  /** The calls' mean latency, ms. */
  latencyMs: number;
  /** The calls' mean time to response headers, ms (absent: swarms recorded before it was kept). */
  ttfbMs?: number;
}

/** What an agent needs to run any task of the swarm; sent once per claim. */
export interface TaskRunConfig {
  swarmId: string;
  /** The swarm's owner: its webhook calls are signed with this tenant's key. */
  tenant: string;
  model: string;
  system: string | null;
  limits: Limits;
  responseFormat: ResponseFormat | null;
  /** The spec's tools (built-ins by name, webhook tools by definition); empty = a plain completion. */
  tools: ToolSpecWire[];
  httpAllowlist: string[];
  parallelToolCalls: boolean | null;
  /** The MCP servers pinned at submit: their tools are offered as `mcp__<server>__<tool>`. */
  mcpServers: PinnedMcpServer[];
  /** A batch's input file (R2 key): each task is one line of it, passed through to the upstream. Null for a spec's swarm. */
  batchInput: string | null;
}

/**
 * A spec tool as it crosses the RPC boundary: a webhook's JSON Schema travels as text (an object of
 * `unknown` values has no RPC type: the whole answer's type would become `never`).
 */
export type ToolSpecWire = BuiltinTool | { name: string; description: string; url: string; parameters_json: string };

/**
 * task: a sub-task of the spec (or of the plan); plan: the planner's call for a `goal`;
 * reduce: one call of the `llm` reducer. Only `task` rows count in counts and results.
 */
export type TaskKind = "task" | "plan" | "reduce";

/** How an engine task (plan, reduce) runs instead of the swarm's defaults: one call, no tools. */
export interface TaskOverride {
  system: string;
  responseFormat: ResponseFormat | null;
  maxOutputTokens: number;
}

/**
 * A multi-turn task's conversation after its last finished turn, so a redelivery resumes there.
 * `messages_json` is the conversation (ChatMessage[]) as JSON text: a recursive message type does
 * not survive the RPC type mapping (TS2589), and the SwarmRoom stores it as text anyway.
 */
export interface AgentCheckpoint {
  /** Messages in the conversation: grows with every checkpoint of a task, so a late one never wins. */
  step: number;
  /** Model calls finished (the next call is turn `turns + 1`). */
  turns: number;
  toolCalls: number;
  repairs: number;
  messages_json: string;
  /** The task's MCP calls so far (TranscriptMcpCall[] as JSON text), for its transcript; absent = none. */
  mcp_calls_json?: string;
  /** The last turn's answer (FinalAnswer as JSON text), once its call ended with no tools to run; absent = none yet. */
  answer_json?: string;
}

export interface ClaimedTask {
  taskId: string;
  /** 1-based; the model call of this attempt has call id `swarm:task:attempt:turn`. */
  attempt: number;
  prompt: string;
  /** The model to call: the spec's model, or a fallback while its circuit is open. */
  model: string;
  /** Per model call: `limits.timeout_s`, or `limits.long_timeout_s` for a long task. */
  timeoutS: number;
  /**
   * Epoch ms after which the SwarmRoom may hand the task to someone else, unless the lane renews
   * the lease first (`PullRequest.renew`): short (LEASE_S), so a lane that dies is noticed in
   * seconds, and renewed while the task's calls run.
   */
  leaseUntil: number;
  /** Epoch ms by which the task's calls must be over, however often its lease is renewed. */
  runUntil: number;
  /**
   * The grant noted this turn's call already (the attempt's first): started by `notedUntil` (the
   * lane's clock), it needs no `startCalls`; the lane lists it in its pulls' `started` instead.
   */
  notedTurn?: number;
  notedUntil?: number;
  /**
   * A standby task (src/core/standby.ts): leased to the lane and its budget reserved, but outside
   * the window. The lane starts it only in the place of one of its tasks that ended for good (and
   * says so in its next pull's `promoted`), or hands it back unstarted (`released`).
   */
  standby?: boolean;
  /**
   * The swarm's prompt-cache warm-up task (limits.cache_warmup): the others wait until the upstream
   * has the shared prefix. When its first call's response headers arrive (or the call ends without
   * them), the lane says so at once (`PullRequest.warmed`) and the room releases them.
   */
  warmup?: boolean;
  kind: TaskKind;
  /** Set for plan and reduce tasks. */
  override: TaskOverride | null;
  /** Where an earlier attempt of this task got to; null = start at turn 1. */
  checkpoint: AgentCheckpoint | null;
}

/**
 * How often a lane's pull lists every grant-noted call it started (PullRequest.startedPartial):
 * a note the room finds unlisted past its `notedUntil` goes unbilled, so this only delays that.
 */
export const STARTED_LIST_MS = 500;

/**
 * One lane's exchange with the SwarmRoom (continuous pull dispatch): the outcomes it has finished
 * since its last pull, recorded first, and how many slots it has free, which the answer fills.
 * A lane is one ticket's consumer; its pulls are coalesced (a few ms or a few outcomes).
 */
export interface PullRequest {
  /** The ticket (queue message) that brought this lane; a duplicate delivery pulls under the same id. */
  ticket: string;
  /** Outcomes since the lane's last pull; recorded idempotently by (task, attempt). */
  reports: TaskReport[];
  /** Free slots to fill now (0: only record). */
  want: number;
  /** How many tasks the lane can run at once (running + free), for sizing the swarm's tickets. */
  slots: number;
  /** The lane stops: nothing more is handed to it and its ticket closes once this is recorded. */
  final: boolean;
  /** Which tasks the lane runs: short ones, or `long: true` ones (their own queue). Default short. */
  pool?: TaskPool;
  /**
   * Which lane this is (random, one per lane: two lanes can share a ticket after a duplicate
   * delivery) and its pull number, the same when it sends a pull again after an error. A repeat of
   * the lane's last answered pull gets that answer's grants again (those still leased to it)
   * instead of new ones, so a lost answer strands no task until its lease ends.
   */
  lane?: string;
  seq?: number;
  /**
   * Epoch ms by which every call of the lane must be over (its invocation stops before its wall-time
   * limit): a task whose calls could outlast it is left for another lane. null = no bound.
   */
  endBy?: number | null;
  /**
   * Running tasks whose lease the lane renews (a heartbeat): their calls are still under way. The
   * room renews each that is still this attempt's, up to its `runUntil`.
   */
  renew?: { taskId: string; attempt: number }[];
  /**
   * Calls the grant noted that the lane has started and not yet reported the outcome of (listed in
   * every pull until the pull carrying their report is answered), and when this pull was built
   * (the lane's clock). A noted call not listed by a pull built after its `notedUntil` never started.
   */
  started?: { taskId: string; attempt: number; turn: number }[];
  sentAt?: number;
  /**
   * `started` lists only the started calls of the attempts this pull reports (absent: every one
   * the lane started and has not reported). A lane sends the whole list every STARTED_LIST_MS
   * only: it holds about the lane's running tasks, and crossing the RPC boundary on every pull it
   * cost more than the reports did. The room looks for never-started notes on whole lists only.
   */
  startedPartial?: boolean;
  /** Standby tasks the lane wants on top of `want` (granted only while the window is full). */
  standby?: number;
  /**
   * Tasks the lane runs now, standby ones aside (absent: 0; sent whenever it runs any). Standby tasks go only to a lane that
   * runs some, or whose answer gives it tasks to run: a lane with none could start no standby task
   * (none of its own ends to make room), and would hand them back and ask again, pull after pull.
   */
  running?: number;
  /**
   * Standby tasks the lane started, each in the place of a task of its own that ended for good
   * (a success, or a failure never retried) and is reported in this pull or an earlier one; listed
   * until a pull carrying them is answered. Recorded before the reports. `startedAt` (the lane's
   * clock, epoch ms): when it started, from which a hedging swarm counts its call's age (its grant
   * noted the call when it was granted, a whole call earlier or more).
   */
  promoted?: { taskId: string; attempt: number; startedAt?: number }[];
  /** Standby tasks handed back unstarted (the lane stops): they are handed out again as they were. */
  released?: { taskId: string; attempt: number }[];
  /** Standby tasks the lane holds unstarted: the window's room (up to `want`) goes to them first (`PullResponse.run`). */
  held?: { taskId: string; attempt: number }[];
  /**
   * The mean time to headers and latency of the lane's recent calls, ms (absent before it has timed
   * one): its `slots` come from them, not from the room's assumption, and only such a lane is retired.
   */
  timing?: { ttfbMs: number; latencyMs: number };
  /** The lane takes no more tasks (it stops, or retires): `slots` are the tasks it still runs and holds. */
  draining?: boolean;
  /**
   * The lane's warm-up task's first call has its response headers (or ended without them): the
   * upstream has processed the shared prefix, so the room releases the held tasks (idempotent).
   */
  warmed?: boolean;
  /**
   * A lane of a swarm sized on no prior whose first call's headers took at least FILL_MIN_MS (they
   * came then, or had not come by then), ms: sent once, before it has timed a call. Lanes of the gate's 6 are then what fills the window,
   * and the room sends every lane it needs rather than FIRST_LANES_MAX until a call has ended.
   */
  firstHeadersMs?: number;
  /**
   * Durable Object requests the lane's host spent to start it (an executor: the consumer's start
   * RPC and its alarm), sent with its first pull so the swarm's billable operations include them.
   */
  hostRequests?: number;
}

/** Short tasks, or the long-chain pool (`tasks[].long`), each on its own queue. */
export type TaskPool = "short" | "long";

export interface PullResponse {
  /** null when the swarm does not exist (a ticket for a swarm that was never started): stop. */
  config: TaskRunConfig | null;
  /** The swarm's root span (W3C traceparent) when the room traces it, for a lane whose ticket had none. */
  traceparent?: string;
  granted: ClaimedTask[];
  /** One per report, in any order. */
  actions: TaskAction[];
  /**
   * Nothing was granted and nothing may be soon: stop (the swarm ended, was cancelled, or every
   * open task is leased to someone). Otherwise a lane with nothing running asks again after `retryInMs`.
   */
  stop: boolean;
  /**
   * When the earliest task waiting to retry (or a circuit) is due, from now; for a lane that runs
   * nothing and got nothing because the window is full, when to ask again (at least 100 ms, or the
   * room's pace). null = nothing waits.
   */
  retryInMs: number | null;
  /** Tasks the room has yet to hand out (pending or waiting to retry); 0 = the swarm's tail. */
  waiting?: number;
  /**
   * How long a lease lasts (LEASE_S, ms): a lane renews a running task's lease when less than half
   * of it is left. Absent from rooms that predate leases renewed by heartbeats.
   */
  leaseMs?: number;
  /** The new lease end of the tasks in `renew` that were renewed (the others are no longer this lane's). */
  renewed?: { taskId: string; leaseUntil: number }[];
  /**
   * Whether a standby task may take an ended task's slot until the next answer: false while more
   * tasks run than the window allows (it shrank), so the lane's running tasks drain down to it.
   */
  transfer?: boolean;
  /** Standby tasks of `held` that entered the window: the lane starts them now. */
  run?: { taskId: string; attempt: number }[];
  /**
   * The least time between this lane's pulls (absent or 0: no pace): the room spreads its request
   * budget over its open lanes (toPullPaceMs), and the lane's standby tasks cover the wait.
   */
  paceMs?: number;
  /**
   * The other lanes carry all the swarm can run: this one takes no more tasks, hands its standby
   * tasks back and ends once its running tasks have (executors end when the swarm needs fewer).
   */
  retire?: boolean;
  /**
   * With `stop`, to a lane that runs and holds nothing: the room has closed its ticket, as the
   * lane's final pull would have, so the lane ends without making one.
   */
  closed?: boolean;
  /**
   * The room already sends every lane of the gate's slots that the window needs (a header-bound
   * prior, or a lane's slow first headers heard): a lane's `firstHeadersMs` would tell it nothing,
   * so the lane does not pull to say it.
   */
  gateBound?: boolean;
  /**
   * limits.hedge: a call still without its whole answer this long after it started may get a
   * backup (ask the room with hedgeCall). Absent: no backups now (off, spent, or too few calls yet).
   */
  hedgeAfterMs?: number;
}

/** The room's answer to a lane that asks to send a call's backup (SwarmRoom.hedgeCall). */
export type HedgeGrant = { granted: true } | { granted: false; reason: "off" | "limit" | "kept_for_tail" | "not_running" | "budget" };

/** One upstream model call, as it goes into the ledger. */
export interface CallRecord {
  turn: number;
  model: string;
  /** null when the upstream sent none (recorded as missing, never as zero). */
  usage: Usage | null;
  latencyMs: number;
  /** Time to the response headers (the connection slot the call held); null when none arrived. */
  ttfbMs?: number | null;
  /** `unknown`: the room's estimate of a call whose outcome was lost with its lane (never sent by an agent). */
  status: "ok" | "error" | "unknown";
  errorClass: ErrorClass | null;
  /** Epoch ms. */
  startedAt: number;
  /**
   * A backup call (limits.hedge): `won` when its answer was the one the task kept. Absent for the
   * turn's first call (the primary), whichever answered first.
   */
  hedge?: "won" | "lost";
}

export type TaskOutcome =
  | { kind: "succeeded"; output: string; finishReason: string | null }
  /** `output`: the raw answer when there was one (invalid_output keeps it). */
  | ({ kind: "failed"; output?: string } & ClassifiedError)
  /**
   * The task did not run (on): no upstream key had a permit within the agent's wait (rate limits
   * are waited for, not collected as 429s), or its lane had no time left. It waits in the room and
   * is granted again after `retryAfterMs`, under a new attempt number; an attempt that made no call
   * does not count against max_attempts.
   */
  | { kind: "deferred"; retryAfterMs: number; reason: string };

export interface TaskReport {
  taskId: string;
  attempt: number;
  outcome: TaskOutcome;
  calls: CallRecord[];
  /** Where a multi-turn task got to: kept for the next attempt when this one is retried or deferred. */
  checkpoint?: AgentCheckpoint;
  /** Tool calls the task's agent has made so far (all attempts). */
  toolCalls?: number;
}

/**
 * A model call about to be sent, noted in the SwarmRoom before its request leaves: if its outcome
 * dies with its lane, the room still bills it, as `unknown`, at this estimate (docs/data.md).
 */
export interface CallStart {
  taskId: string;
  attempt: number;
  turn: number;
  /** The gateway's model name (what prices it). */
  model: string;
  /** The prompt's estimated tokens (the conversation as sent, with its tools). */
  promptTokens: number;
  /** The call's max_tokens: the worst case of its completion. */
  maxTokens: number;
  /** Epoch ms. */
  startedAt: number;
  /** The turn's backup call (limits.hedge); noted through SwarmRoom.hedgeCall, never startCalls. */
  hedge?: true;
}

/** Calls that ended, sent ahead of the task's outcome; with the checkpoint of the turn they finished. */
export interface CallsReport {
  taskId: string;
  attempt: number;
  calls: CallRecord[];
  checkpoint?: AgentCheckpoint;
}

export type ScratchpadRequest = { op: "get"; key: string } | { op: "put"; key: string; value: string; taskId: string } | { op: "list"; prefix: string };

export type ScratchpadResponse =
  | { ok: true; op: "get"; key: string; value: string | null }
  | { ok: true; op: "put"; key: string; bytes: number }
  | { ok: true; op: "list"; keys: string[]; truncated: boolean }
  | { ok: false; error: string };

export interface TaskAction {
  taskId: string;
  /**
   * ack: the outcome is recorded (or someone else owns the task); retry: the room keeps the task
   * waiting and hands it out again (to any lane) after `delaySeconds`.
   */
  action: "ack" | "retry";
  delaySeconds: number;
}

export interface TaskCounts {
  queued: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  skipped_budget: number;
  /** Not run: the swarm stopped early after a run of the same permanent failure (limits.stop_after_failures). */
  skipped: number;
}

/** Tasks that ended, whichever way. */
export const toEndedCount = (counts: Pick<TaskCounts, "succeeded" | "failed" | "cancelled" | "skipped_budget" | "skipped">): number =>
  counts.succeeded + counts.failed + counts.cancelled + counts.skipped_budget + counts.skipped;

export interface UsageTotals {
  calls: number;
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface SwarmStatus {
  id: string;
  name: string;
  /**
   * Calls in `usage` whose outcome died with their lane: billed at their worst case (prompt
   * estimate + max_tokens), so `usage` and `cost_usd` are an upper bound while this is above 0.
   */
  estimated_calls: number;
  state: SwarmState;
  model: string;
  tasks: number;
  window: number;
  counts: TaskCounts;
  usage: UsageTotals;
  /** Tool calls the swarm's agents made (every task, all attempts). */
  tool_calls: number;
  cost_usd: number;
  /**
   * The upstream's prompt cache: the share of prompt tokens it served cached (usage.cached_tokens ÷
   * usage.prompt_tokens) and what that saved against the full input price (the price table's cached rate).
   */
  cache: { hit_ratio: number; saved_usd: number };
  wall_s: number;
  latency_ms: { p50: number | null; p95: number | null };
  /** The reduced answer once the swarm is done; null while it runs. */
  output: ReducedOutput | null;
  /** A goal's plan: the goal, the planner's model and what it planned (null for a spec with tasks). */
  plan: PlanView | null;
  /** The llm reduction's progress, level by level (null unless reduce is llm and it has started). */
  reduction: ReductionView | null;
  reduce: { kind: ReduceSpec["kind"] };
  /** The spec's concurrency; `window` is the current, adaptive one. */
  max_window: number;
  retries: { used: number; budget: number };
  circuits: CircuitView[];
  /** Why the swarm ended as it did, or why it waits (all circuits open). */
  reason: string | null;
  /** The models tasks are routed to, with their weights (one entry for a single model). */
  models: { model: string; weight: number }[];
  /** The spending cap and where the swarm stands against it; null without a budget. */
  budget: BudgetView | null;
  metadata: SwarmMetadata;
  /** What the swarm cost on Cloudflare besides the model: billable operations so far, and per task. */
  billable: BillableView;
  /** How the swarm is dispatched now (docs/architecture.md, "Lane executors"). */
  dispatch: DispatchView;
  /** Backup calls (limits.hedge); null when the swarm does not hedge. */
  hedges: HedgesView | null;
  created_at: string;
  finished_at: string | null;
  /** The swarm this one reran tasks of (POST /v1/swarms/:id/rerun); null for a swarm started from a spec. */
  parent_id: string | null;
  /** Reruns started from this swarm, oldest first. */
  reruns: string[];
}

export interface BillableOperations {
  /** Tickets the room sent to the task queues. */
  queue_messages_sent: number;
  /** Ticket deliveries that reached the room (duplicates included). */
  queue_messages_received: number;
  /** Requests the SwarmRoom served (RPCs from agents and the API, and its alarms). */
  do_requests: number;
  /** Rows written to the SwarmRoom's SQLite storage. */
  do_rows_written: number;
  /** Rows written to D1 (ledger rows and the swarm's index row). */
  d1_rows_written: number;
}

export interface BillableView extends BillableOperations {
  /** Each figure divided by the swarm's tasks (null with no tasks). */
  per_task: BillableOperations | null;
}

export interface ReductionView {
  model: string;
  context_tokens: number;
  /** Level 1 reduces the results; each level's task ids are `__reduce.<level>.<n>`, n = 1..tasks. */
  levels: ReductionLevel[];
  done: boolean;
}

export interface PlanView {
  goal: string;
  model: string;
  state: "planning" | "planned" | "failed";
  /** Planner calls made (a plan that fails validation is asked for once more). */
  attempts: number;
  /** Sub-tasks planned (0 until the plan is accepted); GET /v1/swarms/:id/plan lists them. */
  task_count: number;
  /** Why the last plan was refused. */
  errors: string[];
}

export interface BudgetView {
  max_usd: number | null;
  max_tokens: number | null;
  /** What recorded calls count against it (real cost, or the worst case when usage was missing). */
  charged_usd: number;
  charged_tokens: number;
  /** Worst cases reserved by tasks in the window. */
  reserved_usd: number;
  reserved_tokens: number;
  fallback_tier: string | null;
  /** Less than `fallback_at` of the budget is left: tasks now go to the fallback tier's models. */
  routing_to_fallback_tier: boolean;
}

export type SwarmMetadata = Record<string, string | number | boolean | null>;

/** SwarmStatus as the SwarmRoom returns it over RPC (see ReducedOutputWire). */
/**
 * The swarm's lanes now: how many are open (each a lane executor, or a consumer's lane), the slots
 * they carry together, the least time between one lane's pulls the room asks for, and the mean time
 * to headers and latency of the calls, as the lanes last measured them (null before any).
 */
export interface DispatchView {
  lanes: number;
  slots: number;
  pace_ms: number;
  ttfb_ms: number | null;
  latency_ms: number | null;
}

/** limits.hedge at work: backups sent, those whose answer the task kept, and what they all cost. */
export interface HedgesView {
  sent: number;
  won: number;
  /** Estimates included: a backup aborted before its usage came is billed at its worst case. */
  cost_usd: number;
  /** The most the swarm may send (max_extra × tasks). */
  limit: number;
  /** The delay in force now (null: too few calls yet, or the swarm has ended). */
  after_ms: number | null;
}

export type SwarmStatusWire = Omit<SwarmStatus, "output"> & { output: ReducedOutputWire | null };

/**
 * A conditional status read (`GET /v1/swarms/:id` with If-None-Match). `etag` is set once the swarm
 * has ended (a running swarm's status moves with every read) and stands for the status without its
 * `billable` meters, which count every read; `not_modified`: the caller's tag is still current.
 */
export type StatusRead<S> = { kind: "status"; status: S; etag: string | null } | { kind: "not_modified"; etag: string };

export interface TaskResult {
  task_id: string;
  state: TaskState;
  output: string | null;
  error: { class: ErrorClass; message: string } | null;
  attempts: number;
  /** Tool calls the task's agent made. */
  tool_calls: number;
  usage: UsageTotals;
  cost_usd: number;
  latency_ms: number | null;
}

export interface ResultsPage {
  results: TaskResult[];
  next_cursor: string | null;
}
