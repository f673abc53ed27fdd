// A fake SwarmRoom of the pull dispatch (a queue of tasks, a window, leases, retries with a delay),
// which records every pull, report and call and can be told to fail pulls; it passes the same
// contract suite as the real SwarmRoom (swarm-room-contract.ts). Also fake models, fake clocks
// (with timers) and a runner that reports which messages a consumeTasks batch acked or retried.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { MessageBatchMessage, QueueResult } from "cloudflare:test";
import { FILL_MIN_MS } from "../../../src/core/lane-sizing.ts";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import { STANDBY_MAX } from "../../../src/core/standby.ts";
import type {
  AgentCheckpoint,
  CallRecord,
  CallsReport,
  CallStart,
  ClaimedTask,
  HedgeGrant,
  PullRequest,
  PullResponse,
  ScratchpadRequest,
  ScratchpadResponse,
  TaskAction,
  TaskReport,
  TaskRunConfig,
} from "../../../src/core/swarm-contract.ts";
import { toQueueDelaySeconds } from "../../../src/core/retry-policy.ts";
import type { Ticket } from "../../../src/core/ticket.ts";
import type { CallReport, Schedule } from "../call-journal.ts";
import type { ModelCallResult, ModelClient, ModelRequest } from "../../../src/model/model-client.ts";
import { consumeTasks, type ConsumeTasksDeps } from "../consume-tasks.ts";
import type { SwarmRoomRpc, SwarmRooms } from "../swarm-rooms.ts";

export const USAGE = { prompt_tokens: 10, cached_tokens: 0, completion_tokens: 5, reasoning_tokens: 0, total_tokens: 15 };

/** A task queue message: a ticket of `swarmId` (its id defaults to the message id). */
export function ticketMessage(id: string, swarmId: string, ticket: string = id, attempts = 1): MessageBatchMessage<unknown> {
  return { id, timestamp: new Date(), attempts, body: { v: 2, swarm_id: swarmId, ticket } satisfies Ticket };
}

export type FakeTaskState = "pending" | "running" | "retry_wait" | "succeeded" | "failed" | "cancelled";

export interface FakeTask {
  id: string;
  state: FakeTaskState;
  attempts: number;
  leaseUntil: number | null;
  /** The lease's hard bound, however often it is renewed. */
  runUntil: number | null;
  retryAt: number | null;
  /** The ticket whose lane holds the lease. */
  ticket: string | null;
  checkpoint: AgentCheckpoint | null;
  /** The error of its last failed attempt, or why it ended failed. */
  error: string | null;
  /** Attempts deferred before any call: each gives its place in maxAttempts back. */
  freeAttempts: number;
  /** Running, but leased outside the window and not started (src/core/standby.ts). */
  standby: boolean;
}

export interface FakeRoomOptions {
  /** Task ids, in the order they are handed out. */
  tasks?: readonly string[];
  /** Tasks in flight at most (running and waiting to retry); default unbounded. */
  window?: number;
  /** How long a grant is leased; default 60 s. */
  leaseMs?: number;
  /** Default 10. */
  maxAttempts?: number;
  /** A retryable failure waits at least this long (a longer Retry-After wins); default 0. */
  retryDelayMs?: number;
  /** Per model call (default 7 s); a task whose call could outlast the pull's endBy is not granted. */
  timeoutS?: number;
  /** Overrides of the run settings every answer carries. */
  config?: Partial<TaskRunConfig>;
  /** false: a swarm that was never started (every pull answers config null). */
  exists?: boolean;
  clock?: () => number;
  /** limits.hedge as the room applies it: every pull's delay, and backups granted at most (default: off). */
  hedge?: { afterMs: number; limit: number };
  /**
   * Standby tasks also to a lane that runs tasks (or gets some, once the swarm is gate-bound) and got all it asked while the window has room, as
   * the SwarmRoom grants them when no other lane has a free slot (swarm-dispatch.ts, `wantMet`);
   * default: only once the window is full.
   */
  standbyWhenWantMet?: boolean;
}

const TERMINAL: readonly FakeTaskState[] = ["succeeded", "failed", "cancelled"];

/** A SwarmRoom that hands out its tasks to pulls within its window, like the real one. */
export class FakeRoom implements SwarmRoomRpc {
  readonly tasks = new Map<string, FakeTask>();
  /** Every pull, answered or not, in order, and its clock reading. */
  readonly pulls: PullRequest[] = [];
  readonly pulledAt: number[] = [];
  /** The answer of every pull that answered. */
  readonly answers: PullResponse[] = [];
  /** The reports of every pull that carried any, answered or not. */
  readonly records: TaskReport[][] = [];
  /** Every task handed out, in order. */
  readonly grants: ClaimedTask[] = [];
  /** Ledger rows by call id (task:attempt:turn): calls from pulls and recordCalls, each once. */
  readonly ledger = new Map<string, CallRecord>();
  /** Every recordCalls RPC (the call journal's flushes), answered or not, and its clock reading. */
  readonly journaled: CallsReport[][] = [];
  readonly journaledAt: number[] = [];
  /** `pull` / `recordCalls` in the order they came, to order RPCs against other events. */
  readonly events: string[] = [];
  readonly deadTickets: string[] = [];
  /** Tickets whose lane sent its final pull. */
  readonly closedTickets = new Set<string>();
  /** The model and per-call timeout a granted task carries (default mock-1, the room's timeoutS). */
  readonly models = new Map<string, string>();
  readonly timeouts = new Map<string, number>();
  /** Pull number n (1-based) throws when this says so; default never. */
  failPull: (n: number, request: PullRequest) => boolean = () => false;
  /** recordCalls throws this many times before it answers. */
  recordCallsFailures = 0;
  /** Runs as pull number n (1-based) comes, before it is answered (e.g. to add tasks it will find). */
  beforePull: (n: number, request: PullRequest) => void = () => {};
  /** Runs after each pull is answered (e.g. to move a clock or cancel the swarm). */
  afterPull: (request: PullRequest, answer: PullResponse) => void = () => {};
  window: number;
  cancelled = false;
  /**
   * The room sends the lanes of the gate's slots that fill the window (PullResponse.gateBound): set
   * by a lane's first headers of FILL_MIN_MS or more, as the SwarmRoom does, or by a test (a
   * header-bound prior).
   */
  gateBound = false;
  readonly clock: () => number;
  private readonly leaseMs: number;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: number;
  private readonly timeoutS: number;
  private readonly exists: boolean;
  private readonly config: TaskRunConfig;
  private readonly hedge: { afterMs: number; limit: number } | null;
  private readonly standbyWhenWantMet: boolean;

  constructor(
    readonly swarmId: string,
    options: FakeRoomOptions = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.window = options.window ?? Number.POSITIVE_INFINITY;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.maxAttempts = options.maxAttempts ?? 10;
    this.retryDelayMs = options.retryDelayMs ?? 0;
    this.timeoutS = options.timeoutS ?? 7;
    this.exists = options.exists ?? true;
    this.hedge = options.hedge ?? null;
    this.standbyWhenWantMet = options.standbyWhenWantMet ?? false;
    this.config = {
      swarmId,
      tenant: "tk_fake",
      model: "mock-1",
      system: "sys",
      limits: LimitsSchema.parse({ timeout_s: this.timeoutS, max_output_tokens: 33, max_attempts: this.maxAttempts }),
      responseFormat: null,
      tools: [],
      httpAllowlist: [],
      parallelToolCalls: null,
      mcpServers: [],
      batchInput: null,
      ...options.config,
    };
    this.addTasks(options.tasks ?? []);
  }

  addTasks(ids: readonly string[]): void {
    for (const id of ids)
      this.tasks.set(id, {
        id,
        state: "pending",
        attempts: 0,
        leaseUntil: null,
        runUntil: null,
        retryAt: null,
        ticket: null,
        checkpoint: null,
        error: null,
        freeAttempts: 0,
        standby: false,
      });
  }

  async pull(request: PullRequest): Promise<PullResponse> {
    const now = this.clock();
    const n = this.pulls.push(structuredClone(request));
    this.pulledAt.push(now);
    this.events.push("pull");
    if (request.reports.length > 0) this.records.push(structuredClone(request.reports));
    this.beforePull(n, request);
    if (this.failPull(n, request)) throw new Error("Durable Object is overloaded");
    if (!this.exists) {
      return { config: null, granted: [], actions: request.reports.map((r) => ack(r.taskId)), stop: true, retryInMs: null };
    }
    if (request.firstHeadersMs !== undefined && request.firstHeadersMs >= FILL_MIN_MS) this.gateBound = true;
    const renewed = this.renew(request.renew ?? [], now);
    this.expireLeases(now);
    // Standby tasks started in ended ones' places take them before the ends free them.
    for (const task of request.promoted ?? []) this.intoWindow(task);
    const actions = request.reports.map((report) => this.record(report, now));
    for (const released of request.released ?? []) this.release(released);
    const run: { taskId: string; attempt: number }[] = [];
    for (const held of request.final ? [] : (request.held ?? [])) {
      if (run.length >= Math.min(request.want, this.window - this.inWindow())) break;
      if (this.intoWindow(held)) run.push(held);
    }
    const want = request.want - run.length;
    const { granted, blocked } =
      request.final || (want <= 0 && (request.standby ?? 0) <= 0)
        ? { granted: [], blocked: false }
        : this.grant({ ...request, want: Math.max(0, want), running: (request.running ?? 0) + run.length }, now);
    if (request.final) this.closedTickets.add(request.ticket);
    const finished = this.cancelled || [...this.tasks.values()].every((t) => TERMINAL.includes(t.state));
    const retryInMs = granted.length === 0 && !finished ? this.nextRetryIn(now) : null;
    const waiting = this.count("pending") + this.count("retry_wait");
    const stop = granted.length === 0 && run.length === 0 && (finished || blocked || (waiting === 0 && retryInMs === null));
    const transfer = !finished && this.inWindow() <= this.window;
    const closed = stop && !request.final && (request.running ?? 0) === 0 && (request.held?.length ?? 0) === 0;
    if (closed) this.closedTickets.add(request.ticket);
    const answer: PullResponse = {
      config: this.config,
      granted,
      actions,
      stop,
      retryInMs,
      leaseMs: this.leaseMs,
      renewed,
      transfer,
      waiting,
      ...(run.length > 0 ? { run } : {}),
      ...(closed ? { closed } : {}),
      ...(this.gateBound ? { gateBound: true } : {}),
      ...(this.hedge !== null && !finished && this.hedgeStarts.length < this.hedge.limit ? { hedgeAfterMs: this.hedge.afterMs } : {}),
    };
    this.answers.push(answer);
    this.afterPull(request, answer);
    return answer;
  }

  /** Ends dispatch: nothing more is handed out, tasks not running end cancelled; running ones still record. */
  cancel(): void {
    this.cancelled = true;
    for (const task of this.tasks.values()) {
      if (task.state === "pending" || task.state === "retry_wait") this.end(task, "cancelled", "cancelled by request");
    }
  }

  /** Every call start the lanes noted, in order. */
  readonly starts: CallStart[] = [];
  async startCalls(starts: CallStart[]): Promise<void> {
    this.events.push("startCalls");
    this.starts.push(...structuredClone(starts));
  }

  /** Every backup the room granted (and so noted), in order. */
  readonly hedgeStarts: CallStart[] = [];
  async hedgeCall(start: CallStart): Promise<HedgeGrant> {
    this.events.push("hedgeCall");
    if (this.hedge === null || this.cancelled) return { granted: false, reason: "off" };
    const task = this.tasks.get(start.taskId);
    if (task === undefined || task.state !== "running" || task.attempts !== start.attempt) return { granted: false, reason: "not_running" };
    if (this.hedgeStarts.length >= this.hedge.limit) return { granted: false, reason: "limit" };
    this.hedgeStarts.push(structuredClone(start));
    return { granted: true };
  }

  async recordCalls(reports: CallsReport[]): Promise<void> {
    this.journaled.push(structuredClone(reports));
    this.journaledAt.push(this.clock());
    this.events.push("recordCalls");
    if (this.recordCallsFailures > 0) {
      this.recordCallsFailures -= 1;
      throw new Error("Durable Object is overloaded");
    }
    for (const report of reports) {
      this.insertCalls(report);
      // Like the real room's saveCheckpoint: kept for the attempt that runs, else ignored.
      const task = this.tasks.get(report.taskId);
      if (report.checkpoint !== undefined && task?.state === "running" && task.attempts === report.attempt) task.checkpoint = report.checkpoint;
    }
  }

  async recordDeadTicket(ticket: string): Promise<void> {
    this.deadTickets.push(ticket);
    this.closedTickets.add(ticket);
  }

  /** A plain in-memory scratchpad (the real one is tested against the SwarmRoom). */
  readonly pad = new Map<string, string>();
  async scratchpad(request: ScratchpadRequest): Promise<ScratchpadResponse> {
    switch (request.op) {
      case "get":
        return { ok: true, op: "get", key: request.key, value: this.pad.get(request.key) ?? null };
      case "put":
        this.pad.set(request.key, request.value);
        return { ok: true, op: "put", key: request.key, bytes: request.value.length };
      case "list":
        return { ok: true, op: "list", keys: [...this.pad.keys()].filter((k) => k.startsWith(request.prefix)).sort(), truncated: false };
    }
  }

  task(taskId: string): FakeTask {
    const task = this.tasks.get(taskId);
    if (task === undefined) throw new Error(`no task ${taskId}`);
    return task;
  }

  /** Each task's state and attempts, by id. */
  states(): Record<string, [FakeTaskState, number]> {
    return Object.fromEntries([...this.tasks.values()].map((t) => [t.id, [t.state, t.attempts]]));
  }

  count(state: FakeTaskState): number {
    return [...this.tasks.values()].filter((t) => t.state === state).length;
  }

  /** The call ids (task:attempt:turn) of every recordCalls RPC, in order, repeats kept. */
  journaledCallIds(): string[] {
    return this.journaled.flat().flatMap((r) => r.calls.map((c) => `${r.taskId}:${r.attempt}:${c.turn}`));
  }

  /** Every report the room has been sent (by answered pulls or not), flattened. */
  reports(): TaskReport[] {
    return this.records.flat();
  }

  /** A lane's heartbeat: its running tasks' leases last another leaseMs, up to their run bound. */
  private renew(renew: readonly { taskId: string; attempt: number }[], now: number): { taskId: string; leaseUntil: number }[] {
    return renew.flatMap(({ taskId, attempt }) => {
      const task = this.tasks.get(taskId);
      if (task === undefined || task.state !== "running" || task.attempts !== attempt) return [];
      task.leaseUntil = Math.min(task.runUntil ?? now + this.leaseMs, now + this.leaseMs);
      return [{ taskId, leaseUntil: task.leaseUntil }];
    });
  }

  /** Leases that ran out (a lane died or lost its outcome) bring their tasks back, like the real room's alarm. */
  private expireLeases(now: number): void {
    for (const task of this.tasks.values()) {
      if (task.state !== "running" || task.leaseUntil === null || task.leaseUntil > now) continue;
      if (this.cancelled) this.end(task, "cancelled", "the swarm was cancelled and no outcome arrived within the lease");
      else if (task.attempts >= this.maxAttempts + task.freeAttempts) this.end(task, "failed", "lease_expired");
      else this.toRetryWait(task, now);
    }
  }

  /** Like the real room's recordReports: idempotent by (task, attempt); a success of an older attempt is kept. */
  private record(report: TaskReport, now: number): TaskAction {
    this.insertCalls(report);
    const task = this.tasks.get(report.taskId);
    if (task === undefined || TERMINAL.includes(task.state)) return ack(report.taskId);
    if (report.attempt < 1 || report.attempt > task.attempts) return ack(report.taskId);
    if (report.checkpoint !== undefined && report.attempt === task.attempts) task.checkpoint = report.checkpoint;
    const { outcome } = report;
    if (outcome.kind === "succeeded") {
      this.end(task, "succeeded", null);
      return ack(report.taskId);
    }
    if (report.attempt < task.attempts || (task.state !== "running" && task.state !== "retry_wait")) return ack(report.taskId);
    if (outcome.kind === "deferred") {
      // A repeated deferral of the attempt that waits gets the same answer.
      if (task.state !== "running") return task.retryAt === null ? ack(report.taskId) : retry(report.taskId, task.retryAt - now);
      if (this.cancelled) {
        this.end(task, "cancelled", `cancelled while deferred: ${outcome.reason}`);
        return ack(report.taskId);
      }
      // The attempt keeps its number (no number is handed out twice); one that made no call gives
      // its place in maxAttempts back.
      if (report.calls.length === 0) task.freeAttempts += 1;
      this.toRetryWait(task, now + Math.max(0, outcome.retryAfterMs));
      return retry(report.taskId, outcome.retryAfterMs);
    }
    if (!outcome.retryable || report.attempt >= this.maxAttempts + task.freeAttempts) {
      this.end(task, "failed", `${outcome.class}: ${outcome.message}`);
      return ack(report.taskId);
    }
    if (this.cancelled) {
      this.end(task, "cancelled", `cancelled while waiting to retry: ${outcome.message}`);
      return ack(report.taskId);
    }
    if (task.state !== "retry_wait") this.toRetryWait(task, now + Math.max(this.retryDelayMs, outcome.retryAfterMs ?? 0));
    task.error = `${outcome.class}: ${outcome.message}`;
    return retry(report.taskId, (task.retryAt ?? now) - now);
  }

  /** Tasks holding a place in the window: running (standby ones aside) and waiting to retry. */
  inWindow(): number {
    return [...this.tasks.values()].filter((t) => (t.state === "running" && !t.standby) || t.state === "retry_wait").length;
  }

  /** Running tasks leased outside the window, not started. */
  standbyCount(): number {
    return [...this.tasks.values()].filter((t) => t.state === "running" && t.standby).length;
  }

  private intoWindow({ taskId, attempt }: { taskId: string; attempt: number }): boolean {
    const task = this.tasks.get(taskId);
    if (task === undefined || task.state !== "running" || !task.standby || task.attempts !== attempt) return false;
    task.standby = false;
    return true;
  }

  /** A standby task handed back unstarted: pending again (cancelled after a cancel), its attempt given back. */
  private release({ taskId, attempt }: { taskId: string; attempt: number }): void {
    const task = this.tasks.get(taskId);
    if (task === undefined || task.state !== "running" || !task.standby || task.attempts !== attempt) return;
    task.standby = false;
    if (this.cancelled) {
      this.end(task, "cancelled", "cancelled before it started");
      return;
    }
    task.state = "pending";
    task.leaseUntil = null;
    task.ticket = null;
    task.freeAttempts += 1;
  }

  /**
   * Due retries first (they hold their place in the window), then pending tasks while the window
   * has room, then — the window full — up to `standby` pending ones as standby, to a named lane.
   */
  private grant(request: PullRequest, now: number): { granted: ClaimedTask[]; blocked: boolean } {
    const granted: ClaimedTask[] = [];
    const all = [...this.tasks.values()];
    const due = all.filter((t) => t.state === "retry_wait" && (t.retryAt ?? 0) <= now).sort((a, b) => (a.retryAt ?? 0) - (b.retryAt ?? 0));
    const room = this.window - this.inWindow();
    const windowed = Math.max(0, Math.min(request.want - due.length, room));
    // Only to a lane that runs tasks or gets some here (PullRequest.running).
    const runs = (request.running ?? 0) + Math.min(request.want, due.length) + windowed > 0;
    const wantMet = this.standbyWhenWantMet && ((request.running ?? 0) > 0 || (windowed > 0 && this.gateBound)) && windowed >= request.want - due.length;
    const standbyRoom = request.lane === undefined || (windowed < room && !wantMet) || room < 0 || !runs ? 0 : Math.min(request.standby ?? 0, STANDBY_MAX);
    const pending = all.filter((t) => t.state === "pending").slice(0, windowed + standbyRoom);
    const firstStandby = due.length + windowed;
    for (const [index, task] of [...due, ...pending].entries()) {
      const asStandby = index >= firstStandby;
      if (!asStandby && granted.length >= request.want) continue;
      const timeoutS = this.timeouts.get(task.id) ?? this.timeoutS;
      // The lane must end before this task could: another lane takes it.
      if (request.endBy !== undefined && request.endBy !== null && now + timeoutS * 1_000 > request.endBy) return { granted, blocked: true };
      task.state = "running";
      task.attempts += 1;
      task.leaseUntil = now + this.leaseMs;
      task.runUntil = now + Math.max(this.leaseMs, timeoutS * 1_000);
      task.retryAt = null;
      task.ticket = request.ticket;
      task.standby = asStandby;
      const claimed: ClaimedTask = {
        taskId: task.id,
        attempt: task.attempts,
        prompt: `prompt of ${task.id}`,
        model: this.models.get(task.id) ?? "mock-1",
        timeoutS,
        leaseUntil: task.leaseUntil,
        runUntil: task.runUntil,
        kind: "task",
        override: null,
        checkpoint: task.checkpoint,
        ...(asStandby ? { standby: true } : {}),
      };
      granted.push(claimed);
      this.grants.push(claimed);
    }
    return { granted, blocked: false };
  }

  private nextRetryIn(now: number): number | null {
    const at = [...this.tasks.values()].filter((t) => t.state === "retry_wait").map((t) => t.retryAt ?? now);
    return at.length === 0 ? null : Math.max(0, Math.min(...at) - now);
  }

  private toRetryWait(task: FakeTask, retryAt: number): void {
    task.standby = false;
    task.state = "retry_wait";
    task.retryAt = retryAt;
    task.leaseUntil = null;
    task.ticket = null;
  }

  private end(task: FakeTask, state: "succeeded" | "failed" | "cancelled", error: string | null): void {
    task.standby = false;
    task.state = state;
    task.leaseUntil = null;
    task.retryAt = null;
    task.ticket = null;
    task.error = error;
    if (state === "succeeded") task.checkpoint = null;
  }

  private insertCalls(report: CallReport): void {
    for (const call of report.calls) {
      const id = `${report.taskId}:${report.attempt}:${call.turn}${call.hedge === undefined ? "" : ":h"}`;
      if (!this.ledger.has(id)) this.ledger.set(id, call);
    }
  }
}

function ack(taskId: string): TaskAction {
  return { taskId, action: "ack", delaySeconds: 0 };
}

function retry(taskId: string, delayMs: number): TaskAction {
  return { taskId, action: "retry", delaySeconds: toQueueDelaySeconds(delayMs) };
}

export function roomsOf(...rooms: SwarmRoomRpc[]): SwarmRooms {
  return (swarmId) => {
    const room = rooms.find((r) => "swarmId" in r && r.swarmId === swarmId);
    if (room === undefined) throw new Error(`no fake room for ${swarmId}`);
    return room;
  };
}

/** A model that answers after `delayMs`, counting calls and the most it had in flight. */
export function fakeModel(delayMs = 5, answer: (req: ModelRequest) => ModelCallResult = okResult) {
  const requests: ModelRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const client: ModelClient = {
    async complete(request) {
      requests.push(request);
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        return answer(request);
      } finally {
        inFlight -= 1;
      }
    },
  };
  return { client, requests, maxInFlight: () => maxInFlight, inFlight: () => inFlight };
}

export function okResult(request: ModelRequest): ModelCallResult {
  return { ok: true, text: `answer to ${promptOf(request)}`, finishReason: "stop", usage: USAGE, toolCalls: [], latencyMs: 5, startedAt: Date.now() };
}

/** The task's prompt: the first user message of the conversation. */
export function promptOf(request: ModelRequest): string {
  const user = request.messages.find((m) => m.role === "user");
  return user?.role === "user" ? user.content : "";
}

export const RATE_LIMITED: ModelCallResult = {
  ok: false,
  error: { class: "rate_limited", retryable: true, retryAfterMs: 1_000, message: "429 Too Many Requests" },
  usage: null,
  latencyMs: 3,
  startedAt: 1_700_000_000_000,
};

/** A model that answers the prompts' scripted results in order (then ok), one script per prompt. */
export function scriptedModel(scripts: Record<string, ModelCallResult[]>, onCall: () => void = () => {}) {
  const queues = new Map(Object.entries(scripts).map(([prompt, results]) => [prompt, [...results]]));
  return fakeModel(1, (request) => {
    onCall();
    return queues.get(promptOf(request))?.shift() ?? okResult(request);
  });
}

/** A clock that only moves when the consumer sleeps (or a test moves it). */
export function fakeClock() {
  const clock = { t: 1_800_000_000_000, sleeps: [] as number[] };
  return {
    clock,
    now: () => clock.t,
    sleep: async (ms: number): Promise<void> => {
      clock.sleeps.push(ms);
      clock.t += ms;
    },
  };
}

/**
 * A fake clock whose timers (the call journal's `schedule`) fire as it moves: `advance` moves it by
 * `ms`, running each due timer at its own time, and `sleep` is an advance.
 */
export function fakeTimers() {
  const time = fakeClock();
  const timers: { at: number; run: () => void }[] = [];
  const schedule: Schedule = (run, ms) => {
    const timer = { at: time.clock.t + ms, run };
    timers.push(timer);
    return () => {
      const i = timers.indexOf(timer);
      if (i >= 0) timers.splice(i, 1);
    };
  };
  const advance = (ms: number): void => {
    const end = time.clock.t + ms;
    for (;;) {
      const due = timers.filter((t) => t.at <= end).sort((x, y) => x.at - y.at)[0];
      if (due === undefined) break;
      timers.splice(timers.indexOf(due), 1);
      time.clock.t = Math.max(time.clock.t, due.at);
      due.run();
    }
    time.clock.t = end;
  };
  return {
    clock: time.clock,
    now: time.now,
    schedule,
    advance,
    sleep: async (ms: number): Promise<void> => {
      time.clock.sleeps.push(ms);
      advance(ms);
    },
    /** Timers armed and not yet run or cancelled. */
    armed: () => timers.length,
  };
}

/**
 * The settings of a consumeTasks test: production's limits, no header gate (fake models have no
 * headers), and every outcome pulled at once (coalescing is tested on its own, with its defaults).
 */
export const BASE = {
  concurrency: 8,
  headerSlots: 0,
  pullForMs: 300_000,
  callsWithinMs: 840_000,
  maxTasks: 10_000,
  idleWaitMaxMs: 2_000,
  coalesce: { ms: 0, outcomes: 1 },
} as const satisfies Partial<ConsumeTasksDeps>;

export async function run(messages: MessageBatchMessage<unknown>[], deps: ConsumeTasksDeps): Promise<QueueResult> {
  return (await runObserved(messages, deps)).result;
}

/** Runs a batch and also returns each retried message's delaySeconds, which getQueueResult does not report. */
export async function runObserved(
  messages: MessageBatchMessage<unknown>[],
  deps: ConsumeTasksDeps,
  /** Receives `ack:<id>` when a message is acked, to order acks against other events. */
  events: string[] = [],
  queue = "edgeswarm-tasks",
): Promise<{ result: QueueResult; delays: Map<string, number | undefined> }> {
  const batch = createMessageBatch(queue, messages);
  const delays = new Map<string, number | undefined>();
  for (const m of batch.messages) {
    const retry = m.retry.bind(m);
    m.retry = (options) => {
      delays.set(m.id, options?.delaySeconds);
      retry(options);
    };
    const ack = m.ack.bind(m);
    m.ack = () => {
      events.push(`ack:${m.id}`);
      ack();
    };
  }
  const ctx = createExecutionContext();
  await consumeTasks(batch, deps);
  return { result: await getQueueResult(batch, ctx), delays };
}

export const noWait = async (): Promise<void> => {};
