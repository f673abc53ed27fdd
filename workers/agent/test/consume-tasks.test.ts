// consumeTasks against a fake SwarmRoom and a fake model: the RPC failure paths a real Durable
// Object can't be made to produce on demand, the one-RPC-per-swarm rule and the concurrency bound.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { MessageBatchMessage, QueueResult } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import type { ClaimOptions, ClaimResponse, RecordResponse, TaskReport } from "../../../src/core/swarm-contract.ts";
import type { ModelCallResult, ModelClient, ModelRequest } from "../../../src/model/model-client.ts";
import { consumeTasks } from "../consume-tasks.ts";
import type { SwarmRoomRpc, SwarmRooms } from "../swarm-rooms.ts";

const USAGE = { prompt_tokens: 10, cached_tokens: 0, completion_tokens: 5, reasoning_tokens: 0, total_tokens: 15 };

function message(id: string, swarmId: string, taskIds: string[], attempts = 1): MessageBatchMessage<unknown> {
  return { id, timestamp: new Date(), attempts, body: { v: 1, swarm_id: swarmId, task_ids: taskIds } };
}

/** A SwarmRoom that grants every task (attempt 1) and acks every report, unless told otherwise. */
class FakeRoom implements SwarmRoomRpc {
  claims: string[][] = [];
  claimOptions: (ClaimOptions | undefined)[] = [];
  /** Tasks the claim defers (its answer was full) instead of granting. */
  deferred = new Set<string>();
  records: TaskReport[][] = [];
  claimError: Error | null = null;
  /** recordResults throws this many times before it answers. */
  recordFailures = 0;
  answer: (reports: TaskReport[]) => RecordResponse = (reports) => ({
    actions: reports.map((r) => ({ taskId: r.taskId, action: "ack", delaySeconds: 0 })),
  });
  constructor(readonly swarmId: string) {}

  async claim(taskIds: string[], options?: ClaimOptions): Promise<ClaimResponse> {
    this.claims.push(taskIds);
    this.claimOptions.push(options);
    if (this.claimError !== null) throw this.claimError;
    return {
      config: { swarmId: this.swarmId, model: "mock-1", system: "sys", limits: LimitsSchema.parse({ timeout_s: 7, max_output_tokens: 33 }), responseFormat: null },
      granted: taskIds
        .filter((taskId) => !this.deferred.has(taskId))
        .map((taskId) => ({ taskId, attempt: 1, prompt: `prompt of ${taskId}`, leaseUntil: Date.now() + 60_000 })),
      refused: taskIds.filter((taskId) => this.deferred.has(taskId)).map((taskId) => ({ taskId, reason: "deferred" as const })),
    };
  }

  async recordResults(reports: TaskReport[]): Promise<RecordResponse> {
    this.records.push(reports);
    if (this.recordFailures > 0) {
      this.recordFailures -= 1;
      throw new Error("Durable Object reset because its code was updated");
    }
    return this.answer(reports);
  }

  async recordDeadLetter(): Promise<void> {}
}

function roomsOf(...rooms: FakeRoom[]): SwarmRooms {
  return (swarmId) => {
    const room = rooms.find((r) => r.swarmId === swarmId);
    if (room === undefined) throw new Error(`no fake room for ${swarmId}`);
    return room;
  };
}

/** A model that answers after `delayMs`, counting calls and the most it had in flight. */
function fakeModel(delayMs = 5, answer: (req: ModelRequest) => ModelCallResult = okResult) {
  const requests: ModelRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const client: ModelClient = {
    async complete(request) {
      requests.push(request);
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      inFlight -= 1;
      return answer(request);
    },
  };
  return { client, requests, maxInFlight: () => maxInFlight };
}

function okResult(request: ModelRequest): ModelCallResult {
  return { ok: true, text: `answer to ${request.prompt}`, finishReason: "stop", usage: USAGE, latencyMs: 5, startedAt: Date.now() };
}

async function run(messages: MessageBatchMessage<unknown>[], deps: Parameters<typeof consumeTasks>[1]): Promise<QueueResult> {
  const batch = createMessageBatch("edgeswarm-tasks", messages);
  const ctx = createExecutionContext();
  await consumeTasks(batch, deps);
  return getQueueResult(batch, ctx);
}

const noWait = async (): Promise<void> => {};

describe("consumeTasks with a fake SwarmRoom", () => {
  it("makes one claim and one record per swarm, sends the task's settings to the model, and acks", async () => {
    const a = new FakeRoom("sw_a");
    const b = new FakeRoom("sw_b");
    const model = fakeModel();
    const result = await run(
      [message("m1", "sw_a", ["t1", "t2"]), message("m2", "sw_b", ["t1"]), message("m3", "sw_a", ["t3"])],
      { rooms: roomsOf(a, b), model: model.client, concurrency: 8, sleep: noWait },
    );
    expect(a.claims).toEqual([["t1", "t2", "t3"]]);
    expect(b.claims).toEqual([["t1"]]);
    expect(a.records).toHaveLength(1);
    expect(b.records).toHaveLength(1);
    expect(model.requests).toHaveLength(4);
    expect(model.requests[0]).toEqual({
      model: "mock-1",
      system: "sys",
      prompt: "prompt of t1",
      maxOutputTokens: 33,
      timeoutMs: 7_000,
      responseFormat: null,
    });
    const report = a.records[0]?.find((r) => r.taskId === "t2");
    expect(report).toMatchObject({
      attempt: 1,
      outcome: { kind: "succeeded", output: "answer to prompt of t2", finishReason: "stop" },
      calls: [{ turn: 1, model: "mock-1", usage: USAGE, status: "ok", errorClass: null }],
    });
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2", "m3"]);
    expect(result.retryMessages).toEqual([]);
  });

  it("runs a task named twice in a batch once", async () => {
    const a = new FakeRoom("sw_a");
    const model = fakeModel();
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t1", "t2"])], {
      rooms: roomsOf(a),
      model: model.client,
      concurrency: 8,
    });
    expect(a.claims).toEqual([["t1", "t2"]]);
    expect(model.requests.map((r) => r.prompt).sort()).toEqual(["prompt of t1", "prompt of t2"]);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2"]);
  });

  it("keeps at most `concurrency` model calls in flight across all swarms of the batch", async () => {
    const rooms = ["sw_a", "sw_b", "sw_c"].map((id) => new FakeRoom(id));
    const model = fakeModel(10);
    const messages = rooms.flatMap((room, i) =>
      Array.from({ length: 4 }, (_, j) => message(`m${i}-${j}`, room.swarmId, [`t${j}a`, `t${j}b`])),
    );
    const result = await run(messages, { rooms: roomsOf(...rooms), model: model.client, concurrency: 5 });
    expect(model.requests).toHaveLength(24);
    expect(model.maxInFlight()).toBe(5);
    expect(result.explicitAcks).toHaveLength(12);
  });

  it("asks for a lease that covers every round of calls the batch needs at its concurrency", async () => {
    const a = new FakeRoom("sw_a");
    const b = new FakeRoom("sw_b");
    await run([message("m1", "sw_a", ["t1", "t2", "t3"]), message("m2", "sw_b", ["t1", "t2"])], {
      rooms: roomsOf(a, b),
      model: fakeModel().client,
      concurrency: 2,
    });
    // 5 tasks at 2 calls at once: 3 rounds.
    expect(a.claimOptions).toEqual([{ waves: 3 }]);
    expect(b.claimOptions).toEqual([{ waves: 3 }]);
  });

  it("retries a message whose task the claim deferred, runs and acks the rest", async () => {
    const a = new FakeRoom("sw_a");
    a.deferred.add("t2");
    const model = fakeModel();
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], {
      rooms: roomsOf(a),
      model: model.client,
      concurrency: 4,
    });
    expect(model.requests.map((r) => r.prompt)).toEqual(["prompt of t1"]);
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m2"]);
  });

  it("retries a message with the longest delay the SwarmRoom asked for among its tasks", async () => {
    const a = new FakeRoom("sw_a");
    a.answer = () => ({
      actions: [
        { taskId: "t1", action: "retry", delaySeconds: 3 },
        { taskId: "t2", action: "retry", delaySeconds: 9 },
        { taskId: "t3", action: "ack", delaySeconds: 0 },
      ],
    });
    const queueRetry = vi.fn();
    const batch = createMessageBatch("edgeswarm-tasks", [message("m1", "sw_a", ["t1", "t2"]), message("m2", "sw_a", ["t3"])]);
    // Observe delaySeconds, which getQueueResult does not report.
    const first = batch.messages[0];
    if (first === undefined) throw new Error("no message");
    const original = first.retry.bind(first);
    first.retry = (options) => {
      queueRetry(options);
      original(options);
    };
    const ctx = createExecutionContext();
    await consumeTasks(batch, { rooms: roomsOf(a), model: fakeModel().client, concurrency: 4 });
    const result = await getQueueResult(batch, ctx);
    expect(queueRetry).toHaveBeenCalledWith({ delaySeconds: 9 });
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m1"]);
    expect(result.explicitAcks).toEqual(["m2"]);
  });

  it("retries a message whose task the SwarmRoom gave no action for, rather than acking it", async () => {
    const a = new FakeRoom("sw_a");
    a.answer = () => ({ actions: [{ taskId: "t1", action: "ack", delaySeconds: 0 }] });
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], {
      rooms: roomsOf(a),
      model: fakeModel().client,
      concurrency: 4,
    });
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m2"]);
  });

  it("makes no model call and retries the swarm's messages when the claim RPC fails", async () => {
    const a = new FakeRoom("sw_a");
    const b = new FakeRoom("sw_b");
    a.claimError = new Error("Durable Object is overloaded");
    const model = fakeModel();
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_b", ["t1"])], {
      rooms: roomsOf(a, b),
      model: model.client,
      concurrency: 4,
    });
    expect(model.requests.map((r) => r.prompt)).toEqual(["prompt of t1"]);
    expect(a.records).toEqual([]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m1"]);
    expect(result.explicitAcks).toEqual(["m2"]);
  });

  it("retries a failed recordResults in the invocation with the same reports, then acks", async () => {
    const a = new FakeRoom("sw_a");
    a.recordFailures = 2;
    const waits: number[] = [];
    const model = fakeModel();
    const result = await run([message("m1", "sw_a", ["t1", "t2"])], {
      rooms: roomsOf(a),
      model: model.client,
      concurrency: 4,
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    expect(model.requests).toHaveLength(2);
    expect(a.records).toHaveLength(3);
    expect(a.records[1]).toEqual(a.records[0]);
    expect(a.records[2]).toEqual(a.records[0]);
    expect(waits).toHaveLength(2);
    for (const ms of waits) {
      expect(ms).toBeGreaterThanOrEqual(100);
      expect(ms).toBeLessThanOrEqual(800);
    }
    expect(result.explicitAcks).toEqual(["m1"]);
  });

  it("gives up after 4 tries of recordResults and retries the messages (never acks unrecorded outcomes)", async () => {
    const a = new FakeRoom("sw_a");
    a.recordFailures = 100;
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], {
      rooms: roomsOf(a),
      model: fakeModel().client,
      concurrency: 4,
      sleep: noWait,
    });
    expect(a.records).toHaveLength(4);
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages.map((m) => m.msgId).sort()).toEqual(["m1", "m2"]);
  });

  it("reports a failed call with its class and the usage the upstream sent", async () => {
    const a = new FakeRoom("sw_a");
    const failed: ModelCallResult = {
      ok: false,
      error: { class: "rate_limited", retryable: true, retryAfterMs: 2_000, message: "429 Too Many Requests" },
      usage: null,
      latencyMs: 3,
      startedAt: 1_700_000_000_000,
    };
    await run([message("m1", "sw_a", ["t1"])], { rooms: roomsOf(a), model: fakeModel(1, () => failed).client, concurrency: 1 });
    expect(a.records[0]).toEqual([
      {
        taskId: "t1",
        attempt: 1,
        outcome: { kind: "failed", class: "rate_limited", retryable: true, retryAfterMs: 2_000, message: "429 Too Many Requests" },
        calls: [{ turn: 1, model: "mock-1", usage: null, latencyMs: 3, status: "error", errorClass: "rate_limited", startedAt: 1_700_000_000_000 }],
      },
    ]);
  });
});
