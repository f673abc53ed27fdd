// A fake SwarmRoom, fake models, a fake clock (with timers) for consumeTasks tests, and a runner
// that reports which messages were acked or retried (with the delays getQueueResult leaves out).
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { MessageBatchMessage, QueueResult } from "cloudflare:test";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import type { ClaimedTask, ClaimOptions, ClaimRefusal, ClaimResponse, RecordResponse, ScratchpadRequest, ScratchpadResponse, TaskReport } from "../../../src/core/swarm-contract.ts";
import type { CallReport, Schedule } from "../call-journal.ts";
import type { ModelCallResult, ModelClient, ModelRequest } from "../../../src/model/model-client.ts";
import { consumeTasks } from "../consume-tasks.ts";
import type { SwarmRoomRpc, SwarmRooms } from "../swarm-rooms.ts";

export const USAGE = { prompt_tokens: 10, cached_tokens: 0, completion_tokens: 5, reasoning_tokens: 0, total_tokens: 15 };

export function message(id: string, swarmId: string, taskIds: string[], attempts = 1): MessageBatchMessage<unknown> {
  return { id, timestamp: new Date(), attempts, body: { v: 1, swarm_id: swarmId, task_ids: taskIds } };
}

/** A SwarmRoom that grants every claimable task (attempt = previous + 1) and acks every report, unless told otherwise. */
export class FakeRoom implements SwarmRoomRpc {
  claims: string[][] = [];
  claimOptions: (ClaimOptions | undefined)[] = [];
  /** Fake-clock readings of each claim and each recordResults answer. */
  claimedAt: number[] = [];
  answeredAt: number[] = [];
  /** Claims answer these tasks with a refusal instead of a grant. */
  refusals = new Map<string, ClaimRefusal>();
  /** The model and per-call timeout a granted task carries (default mock-1, 7 s). */
  models = new Map<string, string>();
  timeouts = new Map<string, number>();
  attempts = new Map<string, number>();
  records: TaskReport[][] = [];
  /** Claims throw from this claim number on (1-based); null = never. */
  claimErrorFrom: number | null = null;
  /** recordResults throws this many times before it answers. */
  recordFailures = 0;
  /** Every recordCalls RPC (the call journal's flushes), answered or not, and its fake-clock reading. */
  journaled: CallReport[][] = [];
  journaledAt: number[] = [];
  /** recordCalls throws this many times before it answers. */
  recordCallsFailures = 0;
  /** Appends `recordCalls` / `recordResults` to order the RPCs against other events. */
  events: string[] = [];
  answer: (reports: TaskReport[]) => RecordResponse = ackAll;
  constructor(
    readonly swarmId: string,
    readonly clock: () => number = Date.now,
  ) {}

  async claim(taskIds: string[], options?: ClaimOptions): Promise<ClaimResponse> {
    this.claims.push(taskIds);
    this.claimOptions.push(options);
    this.claimedAt.push(this.clock());
    if (this.claimErrorFrom !== null && this.claims.length >= this.claimErrorFrom) throw new Error("Durable Object is overloaded");
    const granted: ClaimedTask[] = [];
    const refused: ClaimResponse["refused"] = [];
    for (const taskId of taskIds) {
      const reason = this.refusals.get(taskId);
      if (reason !== undefined) {
        refused.push({ taskId, reason });
        continue;
      }
      const attempt = (this.attempts.get(taskId) ?? 0) + 1;
      this.attempts.set(taskId, attempt);
      granted.push({
        taskId,
        attempt,
        prompt: `prompt of ${taskId}`,
        model: this.models.get(taskId) ?? "mock-1",
        timeoutS: this.timeouts.get(taskId) ?? 7,
        leaseUntil: this.clock() + 60_000,
        kind: "task",
        override: null,
        checkpoint: null,
      });
    }
    return {
      config: { swarmId: this.swarmId, tenant: "tk_fake", model: "mock-1", system: "sys", limits: LimitsSchema.parse({ timeout_s: 7, max_output_tokens: 33 }),
        responseFormat: null,
        tools: [],
        httpAllowlist: [],
        parallelToolCalls: null,
      },
      granted,
      refused,
    };
  }

  async recordResults(reports: TaskReport[]): Promise<RecordResponse> {
    this.records.push(reports);
    this.events.push("recordResults");
    if (this.recordFailures > 0) {
      this.recordFailures -= 1;
      throw new Error("Durable Object reset because its code was updated");
    }
    this.answeredAt.push(this.clock());
    return this.answer(reports);
  }

  async recordCalls(reports: CallReport[]): Promise<void> {
    this.journaled.push(reports);
    this.journaledAt.push(this.clock());
    this.events.push("recordCalls");
    if (this.recordCallsFailures > 0) {
      this.recordCallsFailures -= 1;
      throw new Error("Durable Object is overloaded");
    }
  }

  /** The call ids (task:attempt:turn) of every recordCalls RPC, in order, repeats kept. */
  journaledCallIds(): string[] {
    return this.journaled.flat().flatMap((r) => r.calls.map((c) => `${r.taskId}:${r.attempt}:${c.turn}`));
  }

  async recordDeadLetter(): Promise<void> {}

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
}

export function ackAll(reports: TaskReport[]): RecordResponse {
  return { actions: reports.map((r) => ({ taskId: r.taskId, action: "ack", delaySeconds: 0 })) };
}

/** Like the SwarmRoom: a failed attempt below `maxAttempts` is retried after `delaySeconds`, anything else is acked. */
export function retryFailures(delaySeconds: number, maxAttempts = 10): (reports: TaskReport[]) => RecordResponse {
  return (reports) => ({
    actions: reports.map((r) =>
      r.outcome.kind === "failed" && r.attempt < maxAttempts
        ? { taskId: r.taskId, action: "retry", delaySeconds }
        : { taskId: r.taskId, action: "ack", delaySeconds: 0 },
    ),
  });
}

export function roomsOf(...rooms: FakeRoom[]): SwarmRooms {
  return (swarmId) => {
    const room = rooms.find((r) => r.swarmId === swarmId);
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
  return { client, requests, maxInFlight: () => maxInFlight };
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

export const BASE = { concurrency: 8, inlineRetryMaxS: 2 } as const;

export async function run(messages: MessageBatchMessage<unknown>[], deps: Parameters<typeof consumeTasks>[1]): Promise<QueueResult> {
  return (await runObserved(messages, deps)).result;
}

/** Runs a batch and also returns each retried message's delaySeconds, which getQueueResult does not report. */
export async function runObserved(
  messages: MessageBatchMessage<unknown>[],
  deps: Parameters<typeof consumeTasks>[1],
  /** Receives `ack:<id>` when a message is acked, to order acks against other events. */
  events: string[] = [],
): Promise<{ result: QueueResult; delays: Map<string, number | undefined> }> {
  const batch = createMessageBatch("edgeswarm-tasks", messages);
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
