// The agent Worker's queue handler end to end: real SwarmRoom (auxiliary orchestrator Worker), the
// mock model over loopback and the local D1 ledger. Tickets are delivered by hand, since the
// SwarmRoom's own go to a queue nobody consumes here; each brings a lane that pulls the swarm's tasks.
import { promptOf as userPrompt } from "./fake-room.ts";
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { MessageBatchMessage, QueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import type { StartSwarmInput } from "../../../src/core/swarm-contract.ts";
import { createModelClient } from "../../../src/model/model-client.ts";
import type { ModelClient, ModelRequest } from "../../../src/model/model-client.ts";
import { consumeTasks, type ConsumeTasksDeps } from "../consume-tasks.ts";
import { toSwarmRooms } from "../swarm-rooms.ts";
import worker from "../index.ts";
import { directGateway } from "./fake-gateway.ts";
import { LANE_DEFAULTS, ledgerRows, messageIds as ids, mockStats, redelivered, startRoomSwarm, tickets, waitFor, type RoomSwarm } from "./room-swarm.ts";

const TENANT = "tk_agent_test";
const TASK_QUEUE = "edgeswarm-tasks";
const LONG_TASK_QUEUE = "edgeswarm-tasks-long";
const DEAD_LETTER_QUEUE = "edgeswarm-tasks-dlq";
let counter = 0;

interface Swarm extends RoomSwarm {
  taskIds: string[];
}

interface SwarmOptions {
  limits?: Partial<{ max_attempts: number; timeout_s: number; long_timeout_s: number }>;
  fallback?: string[];
  /** Task numbers (1-based) flagged `long`. */
  long?: number[];
}

async function startSwarm(taskCount: number, options: SwarmOptions = {}): Promise<Swarm> {
  counter += 1;
  const swarmId = `sw_agent${Date.now().toString(36)}${counter}`;
  const taskIds = Array.from({ length: taskCount }, (_, i) => `task-${i + 1}`);
  const input: StartSwarmInput = {
    swarmId,
    tenant: TENANT,
    // The window holds every task, so a lane may run all of them at once.
    spec: {
      name: `agent test ${counter}`,
      model: "mock-1",
      ...(options.fallback === undefined ? {} : { fallback: options.fallback }),
      system: "You are a test agent.",
      limits: LimitsSchema.parse({ concurrency: 100, ...options.limits }),
    },
    tasks: taskIds.map((id, i) => ({ id, prompt: promptOf(id), ...(options.long?.includes(i + 1) ? { long: true } : {}) })),
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  return { ...(await startRoomSwarm(input)), taskIds };
}

function promptOf(taskId: string): string {
  return `Summarize item ${taskId}.`;
}

async function deliver(queue: string, messages: MessageBatchMessage<unknown>[]): Promise<QueueResult> {
  const batch = createMessageBatch(queue, messages);
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  return getQueueResult(batch, ctx);
}

/** Fault kinds the mock answers the next requests with, in order ("ok" = a normal answer); its 429s say Retry-After: retryAfterS. */
async function scriptMock(script: string[], retryAfterS = 1): Promise<void> {
  const response = await fetch(`${env.MOCK_MODEL_URL}/admin/scenario`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ script, retry_after_s: retryAfterS }),
  });
  expect(response.status).toBe(200);
}

/**
 * consumeTasks with the real SwarmRoom and the real model client against the mock, through a
 * wrapper that sees (and may break) each model request.
 */
async function deliverWith(
  messages: MessageBatchMessage<unknown>[],
  wrap: (request: ModelRequest, call: () => ReturnType<ModelClient["complete"]>) => ReturnType<ModelClient["complete"]>,
  options: { queue?: string; deps?: Partial<ConsumeTasksDeps> } = {},
): Promise<QueueResult> {
  const real = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY });
  const model: ModelClient = { complete: (request) => wrap(request, () => real.complete(request)) };
  const batch = createMessageBatch(options.queue ?? TASK_QUEUE, messages);
  const ctx = createExecutionContext();
  await consumeTasks(batch, { ...LANE_DEFAULTS, concurrency: 8, rooms: toSwarmRooms(env.SWARM_ROOM), gateway: directGateway(model), ...options.deps });
  return getQueueResult(batch, ctx);
}

afterEach(async () => {
  // Back to plain answers: a script step left over would fail the next test's calls.
  await scriptMock([]);
  vi.restoreAllMocks();
});

describe("agent queue consumer: happy path and idempotency", () => {
  it("runs a batch of tickets: every message acked, every output recorded, one ledger row per call with the upstream's tokens", async () => {
    const swarm = await startSwarm(6);
    const before = await mockStats();
    const messages = tickets(swarm.swarmId, 3);

    const result = await deliver(TASK_QUEUE, messages);

    expect(result.explicitAcks.sort()).toEqual(ids(messages));
    expect(result.retryMessages).toEqual([]);
    const after = await mockStats();
    expect(after.calls - before.calls).toBe(6);

    const status = await swarm.status();
    expect(status.state).toBe("completed");
    expect(status.counts.succeeded).toBe(6);
    const results = await swarm.results();
    expect(results.map((r) => r.task_id)).toEqual(swarm.taskIds);
    for (const r of results) {
      expect(r.state).toBe("succeeded");
      expect(r.output?.length).toBeGreaterThan(0);
      expect(r.attempts).toBe(1);
    }

    const rows = await ledgerRows(swarm.swarmId, 6);
    expect(rows.map((r) => r.call_id)).toEqual(swarm.taskIds.map((t) => `${swarm.swarmId}:${t}:1:1`).sort());
    for (const row of rows) {
      expect(row.status).toBe("ok");
      expect(row.prompt_tokens).toBeGreaterThan(0);
    }
    const ledgerTokens = rows.reduce((sum, row) => sum + (row.total_tokens ?? 0), 0);
    expect(ledgerTokens).toBe(after.total_tokens - before.total_tokens);
  });

  it("does no model call when a whole batch is delivered again, acks it, and keeps ledger rows = model calls", async () => {
    const swarm = await startSwarm(6);
    const before = await mockStats();
    const messages = tickets(swarm.swarmId, 3);
    const first = await deliver(TASK_QUEUE, messages);
    expect(first.explicitAcks.sort()).toEqual(ids(messages));
    const afterFirst = await mockStats();
    expect(afterFirst.calls - before.calls).toBe(6);

    const again = await deliver(TASK_QUEUE, redelivered(messages));

    expect((await mockStats()).calls).toBe(afterFirst.calls);
    expect(again.explicitAcks.sort()).toEqual(ids(messages));
    expect(again.retryMessages).toEqual([]);
    expect((await swarm.status()).usage.calls).toBe(6);
    const rows = await ledgerRows(swarm.swarmId, 6);
    expect(rows).toHaveLength(afterFirst.calls - before.calls);
    expect(rows.reduce((sum, row) => sum + (row.total_tokens ?? 0), 0)).toBe(afterFirst.total_tokens - before.total_tokens);
  });

  it("runs each task once when the same batch is delivered twice at the same time", async () => {
    const swarm = await startSwarm(4);
    const before = await mockStats();
    const messages = tickets(swarm.swarmId, 4);

    // Two lanes per ticket pull side by side: the room leases each task to one of them.
    const [one, two] = await Promise.all([deliver(TASK_QUEUE, messages), deliver(TASK_QUEUE, redelivered(messages))]);

    expect(one.explicitAcks.sort()).toEqual(ids(messages));
    expect(two.explicitAcks.sort()).toEqual(ids(messages));
    const after = await mockStats();
    expect(after.calls - before.calls).toBe(4);
    const results = await swarm.results();
    expect(results.map((r) => [r.state, r.attempts])).toEqual(swarm.taskIds.map(() => ["succeeded", 1]));
    expect(await ledgerRows(swarm.swarmId, 4)).toHaveLength(4);
  });

  it("runs one lane for a ticket delivered twice in one batch: each task called once, both messages acked", async () => {
    const swarm = await startSwarm(3);
    const before = await mockStats();
    const [ticket] = tickets(swarm.swarmId, 1);
    if (ticket === undefined) throw new Error("no ticket");
    const messages = [ticket, { ...ticket, id: `${ticket.id}-again`, attempts: 2 }];

    const result = await deliver(TASK_QUEUE, messages);

    expect((await mockStats()).calls - before.calls).toBe(3);
    expect(result.explicitAcks.sort()).toEqual(ids(messages));
    expect((await swarm.status()).counts.succeeded).toBe(3);
  });

  it("acks the ticket of a swarm that does not exist, without a model call", async () => {
    const before = await mockStats();
    const messages = tickets(`sw_never_started_${Date.now()}`, 1);
    const result = await deliver(TASK_QUEUE, messages);
    expect(result.explicitAcks).toEqual(ids(messages));
    expect((await mockStats()).calls).toBe(before.calls);
  });

  it("reads a task packet of the earlier dispatch (v1) as a ticket: it brings a lane that runs the swarm", async () => {
    const swarm = await startSwarm(2);
    const legacy: MessageBatchMessage<unknown> = {
      id: "legacy-1",
      timestamp: new Date(),
      attempts: 1,
      body: { v: 1, swarm_id: swarm.swarmId, task_ids: ["task-1"] },
    };

    const result = await deliver(TASK_QUEUE, [legacy]);

    expect(result.explicitAcks).toEqual(["legacy-1"]);
    expect((await swarm.status()).counts.succeeded).toBe(2);
  });

  it("acks and logs a message whose body is not a ticket, and still runs the rest of the batch", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const swarm = await startSwarm(1);
    const good = tickets(swarm.swarmId, 1);
    const garbage: MessageBatchMessage<unknown> = { id: "garbage-1", timestamp: new Date(), attempts: 1, body: { hello: "world" } };

    const result = await deliver(TASK_QUEUE, [garbage, ...good]);

    expect(result.explicitAcks.sort()).toEqual(["garbage-1", ...ids(good)].sort());
    expect(errors.mock.calls.some((args) => String(args[0]).includes("garbage-1"))).toBe(true);
    expect((await swarm.status()).counts.succeeded).toBe(1);
  });
});

describe("agent queue consumer: upstream failures", () => {
  it("re-runs a 429 (Retry-After 1 s) in the same lane without spending an attempt: two 429s and a success, with max_attempts 2", async () => {
    const swarm = await startSwarm(1, { limits: { max_attempts: 2 } });
    await scriptMock(["429", "429"]);
    const before = await mockStats();
    const messages = tickets(swarm.swarmId, 1);

    const result = await deliver(TASK_QUEUE, messages);

    expect(result.explicitAcks).toEqual(ids(messages));
    expect(result.retryMessages).toEqual([]);
    expect((await mockStats()).calls - before.calls).toBe(3);
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "succeeded", attempts: 3 });
    const rows = await ledgerRows(swarm.swarmId, 3);
    expect(rows.map((r) => [r.attempt, r.status, r.error_class])).toEqual([
      [1, "error", "rate_limited"],
      [2, "error", "rate_limited"],
      [3, "ok", null],
    ]);
    expect((await swarm.status()).state).toBe("completed");
  });

  it("fails a task after max_attempts transient failures (5xx), and acks", async () => {
    const swarm = await startSwarm(1, { limits: { max_attempts: 2 } });
    await scriptMock(["503", "500"]);
    const before = await mockStats();
    const messages = tickets(swarm.swarmId, 1);

    const result = await deliver(TASK_QUEUE, messages);

    expect(result.explicitAcks).toEqual(ids(messages));
    expect((await mockStats()).calls - before.calls).toBe(2);
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "failed", attempts: 2, error: { class: "upstream_error" } });
    expect((await swarm.status()).state).toBe("completed_with_failures");
  });

  it("re-runs a 500 in the same lane and succeeds on attempt 2", async () => {
    const swarm = await startSwarm(2, { limits: { max_attempts: 3 } });
    await scriptMock(["500", "ok"]);
    const messages = tickets(swarm.swarmId, 1);

    const result = await deliver(TASK_QUEUE, messages);

    expect(result.explicitAcks.sort()).toEqual(ids(messages));
    const results = await swarm.results();
    expect(results.map((r) => r.state)).toEqual(["succeeded", "succeeded"]);
    expect(results.map((r) => r.attempts).sort()).toEqual([1, 2]);
    const rows = await ledgerRows(swarm.swarmId, 3);
    expect(rows.map((r) => [r.status, r.error_class]).sort()).toEqual([
      ["error", "upstream_error"],
      ["ok", null],
      ["ok", null],
    ]);
  });

  it("leaves a 429 whose Retry-After exceeds INLINE_RETRY_MAX_S waiting in the room and acks; a later ticket runs attempt 2", async () => {
    const swarm = await startSwarm(1, { limits: { max_attempts: 3 } });
    await scriptMock(["429", "ok"], 3);
    const before = await mockStats();
    const first = tickets(swarm.swarmId, 1);

    const r1 = await deliver(TASK_QUEUE, first);

    // The lane does not sleep 3 s: it ends and its ticket is acked; the retry waits in the room.
    expect(r1.explicitAcks).toEqual(ids(first));
    expect(r1.retryMessages).toEqual([]);
    expect((await mockStats()).calls - before.calls).toBe(1);
    expect((await swarm.status()).counts.queued).toBe(1);
    expect((await swarm.results())[0]).toMatchObject({ state: "retry_wait", attempts: 1 });

    // The room would send a fresh ticket once the retry is due; deliver one by hand.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const second = tickets(swarm.swarmId, 1);
    const r2 = await deliver(TASK_QUEUE, second);
    expect(r2.explicitAcks).toEqual(ids(second));
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "succeeded", attempts: 2 });
    const rows = await ledgerRows(swarm.swarmId, 2);
    expect(rows.map((r) => [r.attempt, r.status, r.error_class])).toEqual([
      [1, "error", "rate_limited"],
      [2, "ok", null],
    ]);
  });

  it.each([
    { fault: "401", errorClass: "auth" },
    { fault: "400", errorClass: "bad_request" },
    { fault: "context_length", errorClass: "context_length" },
    { fault: "insufficient_quota", errorClass: "quota_exceeded" },
  ])("fails the task at once on a permanent $fault ($errorClass): acked, not retried", async ({ fault, errorClass }) => {
    const swarm = await startSwarm(1, { limits: { max_attempts: 4 } });
    await scriptMock([fault]);
    const messages = tickets(swarm.swarmId, 1);

    const result = await deliver(TASK_QUEUE, messages);

    expect(result.explicitAcks).toEqual(ids(messages));
    expect(result.retryMessages).toEqual([]);
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "failed", attempts: 1, error: { class: errorClass } });
    expect(task?.error?.message).not.toContain("test-model-key");
    const rows = await ledgerRows(swarm.swarmId, 1);
    expect(rows.map((r) => [r.status, r.error_class, r.total_tokens])).toEqual([["error", errorClass, null]]);
  });

  it.each([
    { fault: "malformed", errorClass: "malformed_response" },
    { fault: "truncated", errorClass: "truncated_stream" },
  ])("classifies a $fault stream as $errorClass", async ({ fault, errorClass }) => {
    // One attempt, so the retryable failure is final and its class is the task's.
    const swarm = await startSwarm(1, { limits: { max_attempts: 1 } });
    await scriptMock([fault]);
    const messages = tickets(swarm.swarmId, 1);

    const result = await deliver(TASK_QUEUE, messages);

    expect(result.explicitAcks).toEqual(ids(messages));
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "failed", error: { class: errorClass } });
  });

  it("ends a call whose stream hangs at timeout_s as upstream_timeout", async () => {
    const swarm = await startSwarm(1, { limits: { max_attempts: 1, timeout_s: 1 } });
    await scriptMock(["hang"]);
    const messages = tickets(swarm.swarmId, 1);

    const result = await deliver(TASK_QUEUE, messages);

    expect(result.explicitAcks).toEqual(ids(messages));
    const [task] = await swarm.results();
    expect(task).toMatchObject({ state: "failed", error: { class: "upstream_timeout" } });
  });

  it("records a call without usage as missing (null tokens), not as zero", async () => {
    const swarm = await startSwarm(1);
    await scriptMock(["no_usage"]);
    const messages = tickets(swarm.swarmId, 1);

    await deliver(TASK_QUEUE, messages);

    const [task] = await swarm.results();
    expect(task?.state).toBe("succeeded");
    const rows = await ledgerRows(swarm.swarmId, 1);
    expect(rows.map((r) => [r.status, r.prompt_tokens, r.total_tokens])).toEqual([["ok", null, null]]);
  });
});

describe("agent queue consumer: what the pull decides", () => {
  it("calls the model and timeout the SwarmRoom granted; a long task only on the long queue, with limits.long_timeout_s", async () => {
    const swarm = await startSwarm(2, { limits: { timeout_s: 7, long_timeout_s: 300 }, long: [2] });
    const seen: ModelRequest[] = [];
    const spy = (request: ModelRequest, call: () => ReturnType<ModelClient["complete"]>): ReturnType<ModelClient["complete"]> => {
      seen.push(request);
      return call();
    };

    const short = await deliverWith(tickets(swarm.swarmId, 1), spy);
    expect(short.explicitAcks).toHaveLength(1);
    expect(seen.map((r) => [userPrompt(r), r.model, r.timeoutMs])).toEqual([[promptOf("task-1"), "mock-1", 7_000]]);

    const long = await deliverWith(tickets(swarm.swarmId, 1), spy, { queue: LONG_TASK_QUEUE });
    expect(long.explicitAcks).toHaveLength(1);
    expect(seen.slice(1).map((r) => [userPrompt(r), r.model, r.timeoutMs])).toEqual([[promptOf("task-2"), "mock-1", 300_000]]);
    expect((await swarm.status()).state).toBe("completed");
  });

  it("serves the long-chain queue with the same handler: runs, records and acks", async () => {
    const swarm = await startSwarm(2, { long: [1, 2] });
    const before = await mockStats();
    const messages = tickets(swarm.swarmId, 2);

    const result = await deliver(LONG_TASK_QUEUE, messages);

    expect(result.explicitAcks.sort()).toEqual(ids(messages));
    expect((await mockStats()).calls - before.calls).toBe(2);
    expect((await swarm.status()).counts.succeeded).toBe(2);
  });

  it("calls the fallback model while the primary's circuit is open, records that model, and acks a ticket that finds every circuit open without a call", async () => {
    // Five upstream failures in a row open mock-1's circuit (the SwarmRoom's breaker): a lane
    // allowed five tasks runs tasks 1-5 into the scripted 500s.
    const withFallback = await startSwarm(6, { limits: { max_attempts: 1 }, fallback: ["mock-2"] });
    const without = await startSwarm(6, { limits: { max_attempts: 1 } });
    for (const swarm of [withFallback, without]) {
      await scriptMock(["500", "500", "500", "500", "500"]);
      await deliverWith(tickets(swarm.swarmId, 1), (_request, call) => call(), { deps: { maxTasks: 5 } });
      expect((await swarm.status()).circuits).toContainEqual(expect.objectContaining({ model: "mock-1", state: "open" }));
    }
    const seen: ModelRequest[] = [];
    const spy = (request: ModelRequest, call: () => ReturnType<ModelClient["complete"]>): ReturnType<ModelClient["complete"]> => {
      seen.push(request);
      return call();
    };

    const routed = tickets(withFallback.swarmId, 1);
    expect((await deliverWith(routed, spy)).explicitAcks).toEqual(ids(routed));
    expect(seen.map((r) => r.model)).toEqual(["mock-2"]);
    const rows = await ledgerRows(withFallback.swarmId, 6);
    expect(rows.filter((r) => r.task_id === "task-6").map((r) => [r.model, r.status])).toEqual([["mock-2", "ok"]]);

    const parked = tickets(without.swarmId, 1);
    const result = await deliverWith(parked, spy);
    expect(result.explicitAcks).toEqual(ids(parked));
    expect(result.retryMessages).toEqual([]);
    expect(seen).toHaveLength(1);
    expect((await without.results()).find((r) => r.task_id === "task-6")?.state).not.toBe("running");
  });
});

describe("agent queue consumer: a run that throws halfway through a lane", () => {
  it("records what finished and acks; the task that threw stays leased (a redelivery runs nothing), then runs once more after its lease; its lost call is billed", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const swarm = await startSwarm(3, { limits: { timeout_s: 1 } });
    const before = await mockStats();
    const messages = tickets(swarm.swarmId, 1);

    // The agent loop throws for task-2 once the upstream answered: its outcome is lost.
    let lostTokens = 0;
    const r1 = await deliverWith(messages, async (request, call) => {
      if (userPrompt(request) === promptOf("task-2")) {
        const served = await call();
        lostTokens = served.usage?.total_tokens ?? 0;
        throw new Error("agent loop bug");
      }
      return call();
    });

    // The lane reached the room, so its ticket is acked: the lease, not the queue, brings task-2 back.
    expect(r1.explicitAcks).toEqual(ids(messages));
    expect(r1.retryMessages).toEqual([]);
    expect((await mockStats()).calls - before.calls).toBe(3);
    expect((await swarm.status()).counts).toMatchObject({ succeeded: 2, running: 1 });

    // The queue redelivers the ticket while task-2's lease is live: no model call at all.
    const r2 = await deliver(TASK_QUEUE, redelivered(messages));
    expect(r2.explicitAcks).toEqual(ids(messages));
    expect((await mockStats()).calls - before.calls).toBe(3);

    // The lease (timeout_s + LEASE_GRACE_S) ends; the SwarmRoom's alarm takes task-2 back and
    // issues a ticket (to a queue nobody consumes here), so deliver one by hand.
    expect(await waitFor(async () => (await swarm.status()).counts.running === 0, 60_000)).toBe(true);

    const fresh = tickets(swarm.swarmId, 1);
    const r3 = await deliver(TASK_QUEUE, fresh);
    expect(r3.explicitAcks).toEqual(ids(fresh));
    const after = await mockStats();
    expect(after.calls - before.calls).toBe(4);
    const results = await swarm.results();
    expect(results.map((r) => [r.task_id, r.state, r.attempts])).toEqual([
      ["task-1", "succeeded", 1],
      ["task-2", "succeeded", 2],
      ["task-3", "succeeded", 1],
    ]);
    // Upstream calls = ledger rows: the lost call is there as `unknown` (an estimate), its retry as a new call id.
    const rows = await ledgerRows(swarm.swarmId, 4);
    expect(rows.map((r) => [r.call_id, r.status])).toEqual([
      [`${swarm.swarmId}:task-1:1:1`, "ok"],
      [`${swarm.swarmId}:task-2:1:1`, "unknown"],
      [`${swarm.swarmId}:task-2:2:1`, "ok"],
      [`${swarm.swarmId}:task-3:1:1`, "ok"],
    ]);
    const known = rows.filter((row) => row.status !== "unknown").reduce((sum, row) => sum + (row.total_tokens ?? 0), 0);
    expect(known + lostTokens).toBe(after.total_tokens - before.total_tokens);
    // The estimate is the worst case: never below what the upstream really billed.
    expect(rows.find((row) => row.status === "unknown")?.total_tokens ?? 0).toBeGreaterThanOrEqual(lostTokens);
    const status = await swarm.status();
    expect(status.state).toBe("completed");
    expect(status.estimated_calls).toBe(1);
  }, 90_000);
});

describe("agent dead-letter consumer", () => {
  it("closes dead-lettered tickets in their room and acks, with no model call; the swarm's open tasks wait for the next ticket", async () => {
    const swarm = await startSwarm(3);
    const dead = tickets(swarm.swarmId, 2, 13);
    const before = await mockStats();

    const result = await deliver(DEAD_LETTER_QUEUE, dead);

    expect(result.explicitAcks.sort()).toEqual(ids(dead));
    expect((await mockStats()).calls).toBe(before.calls);
    expect((await swarm.status()).counts).toMatchObject({ queued: 3, succeeded: 0 });
    // Nothing was ended by the dead letters: a fresh ticket runs every task.
    await deliver(TASK_QUEUE, tickets(swarm.swarmId, 1));
    expect((await swarm.results()).map((r) => [r.task_id, r.state])).toEqual(swarm.taskIds.map((id) => [id, "succeeded"]));
    expect((await swarm.status()).state).toBe("completed");
  });
});
