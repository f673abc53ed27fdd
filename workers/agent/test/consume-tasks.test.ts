// consumeTasks against a fake SwarmRoom and a fake model: the RPC failure paths a real Durable
// Object can't be made to produce on demand, the one-RPC-per-swarm rule and the concurrency bound.
import { describe, expect, it, vi } from "vitest";
import { directGateway } from "./fake-gateway.ts";
import { promptOf, BASE, FakeRoom, fakeClock, fakeModel, message, noWait, okResult, RATE_LIMITED, retryFailures, roomsOf, run, runObserved, scriptedModel, USAGE } from "./fake-room.ts";
describe("consumeTasks with a fake SwarmRoom: one round", () => {
  it("makes one claim and one record per swarm, sends the task's settings to the model, and acks", async () => {
    const a = new FakeRoom("sw_a");
    const b = new FakeRoom("sw_b");
    const model = fakeModel();
    const result = await run(
      [message("m1", "sw_a", ["t1", "t2"]), message("m2", "sw_b", ["t1"]), message("m3", "sw_a", ["t3"])],
      { ...BASE, rooms: roomsOf(a, b), gateway: directGateway(model.client), sleep: noWait },
    );
    expect(a.claims).toEqual([["t1", "t2", "t3"]]);
    expect(b.claims).toEqual([["t1"]]);
    expect(a.records).toHaveLength(1);
    expect(b.records).toHaveLength(1);
    expect(model.requests).toHaveLength(4);
    expect(model.requests[0]).toEqual({
      model: "mock-1",
      messages: [
        { role: "system", content: "sys" },
        { role: "user", content: "prompt of t1" },
      ],
      tools: null,
      parallelToolCalls: null,
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

  it("calls the model and timeout the claim granted for each task (a fallback model, a long task's timeout), and records that model", async () => {
    const a = new FakeRoom("sw_a");
    a.models.set("t1", "fallback-1");
    a.timeouts.set("t2", 600);
    const model = fakeModel();
    await run([message("m1", "sw_a", ["t1", "t2"])], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client) });
    const byPrompt = new Map(model.requests.map((r) => [promptOf(r), r]));
    expect(byPrompt.get("prompt of t1")).toMatchObject({ model: "fallback-1", timeoutMs: 7_000 });
    // Not the swarm config's model or limits.timeout_s (mock-1, 7 s).
    expect(byPrompt.get("prompt of t2")).toMatchObject({ model: "mock-1", timeoutMs: 600_000 });
    const calls = new Map(a.records[0]?.map((r) => [r.taskId, r.calls[0]?.model]));
    expect(calls).toEqual(new Map([["t1", "fallback-1"], ["t2", "mock-1"]]));
  });

  it("runs a task named twice in a batch once", async () => {
    const a = new FakeRoom("sw_a");
    const model = fakeModel();
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t1", "t2"])], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
    });
    expect(a.claims).toEqual([["t1", "t2"]]);
    expect(model.requests.map((r) => promptOf(r)).sort()).toEqual(["prompt of t1", "prompt of t2"]);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2"]);
  });

  it("keeps at most `concurrency` model calls in flight across all swarms of the batch", async () => {
    const rooms = ["sw_a", "sw_b", "sw_c"].map((id) => new FakeRoom(id));
    const model = fakeModel(10);
    const messages = rooms.flatMap((room, i) =>
      Array.from({ length: 4 }, (_, j) => message(`m${i}-${j}`, room.swarmId, [`t${j}a`, `t${j}b`])),
    );
    const result = await run(messages, { ...BASE, rooms: roomsOf(...rooms), gateway: directGateway(model.client), concurrency: 5 });
    expect(model.requests).toHaveLength(24);
    expect(model.maxInFlight()).toBe(5);
    expect(result.explicitAcks).toHaveLength(12);
  });

  it("asks for a lease that covers every round of calls the batch needs at its concurrency", async () => {
    const a = new FakeRoom("sw_a");
    const b = new FakeRoom("sw_b");
    await run([message("m1", "sw_a", ["t1", "t2", "t3"]), message("m2", "sw_b", ["t1", "t2"])], {
      ...BASE,
      rooms: roomsOf(a, b),
      gateway: directGateway(fakeModel().client),
      concurrency: 2,
    });
    // 5 tasks at 2 calls at once: 3 rounds.
    expect(a.claimOptions).toEqual([{ waves: 3 }]);
    expect(b.claimOptions).toEqual([{ waves: 3 }]);
  });

  it("retries a message whose task the claim deferred, runs and acks the rest", async () => {
    const a = new FakeRoom("sw_a");
    a.refusals.set("t2", "deferred");
    const model = fakeModel();
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client) });
    expect(model.requests.map((r) => promptOf(r))).toEqual(["prompt of t1"]);
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m2"]);
  });

  it.each(["parked", "done", "leased", "unknown"] as const)("acks a message whose only task the claim refused as %s, without a model call", async (reason) => {
    const a = new FakeRoom("sw_a");
    a.refusals.set("t1", reason);
    const model = fakeModel();
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client) });
    expect(model.requests.map((r) => promptOf(r))).toEqual(["prompt of t2"]);
    expect(a.records).toEqual([[expect.objectContaining({ taskId: "t2" })]]);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2"]);
    expect(result.retryMessages).toEqual([]);
  });

  it("hands a retry delayed past INLINE_RETRY_MAX_S to the queue with the longest delay among the message's tasks, with no inline round", async () => {
    const a = new FakeRoom("sw_a");
    a.answer = () => ({
      actions: [
        { taskId: "t1", action: "retry", delaySeconds: 3 },
        { taskId: "t2", action: "retry", delaySeconds: 9 },
        { taskId: "t3", action: "ack", delaySeconds: 0 },
      ],
    });
    const time = fakeClock();
    const model = fakeModel();
    const { result, delays } = await runObserved([message("m1", "sw_a", ["t1", "t2"]), message("m2", "sw_a", ["t3"])], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(a.claims).toHaveLength(1);
    expect(model.requests).toHaveLength(3);
    expect(time.clock.sleeps).toEqual([]);
    expect(delays).toEqual(new Map([["m1", 9]]));
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m1"]);
    expect(result.explicitAcks).toEqual(["m2"]);
  });

  it("retries a message whose task the SwarmRoom gave no action for, rather than acking it", async () => {
    const a = new FakeRoom("sw_a");
    a.answer = () => ({ actions: [{ taskId: "t1", action: "ack", delaySeconds: 0 }] });
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], { ...BASE, rooms: roomsOf(a), gateway: directGateway(fakeModel().client) });
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m2"]);
  });

  it("makes no model call and retries the swarm's messages when the claim RPC fails", async () => {
    const a = new FakeRoom("sw_a");
    const b = new FakeRoom("sw_b");
    a.claimErrorFrom = 1;
    const model = fakeModel();
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_b", ["t1"])], { ...BASE, rooms: roomsOf(a, b), gateway: directGateway(model.client) });
    expect(model.requests.map((r) => promptOf(r))).toEqual(["prompt of t1"]);
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
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
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
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(fakeModel().client),
      sleep: noWait,
    });
    expect(a.records).toHaveLength(4);
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages.map((m) => m.msgId).sort()).toEqual(["m1", "m2"]);
  });

  it("reports a failed call with its class and the usage the upstream sent", async () => {
    const a = new FakeRoom("sw_a");
    a.answer = retryFailures(60);
    await run([message("m1", "sw_a", ["t1"])], { ...BASE, rooms: roomsOf(a), gateway: directGateway(fakeModel(1, () => RATE_LIMITED).client), concurrency: 1 });
    expect(a.records[0]).toEqual([
      {
        taskId: "t1",
        attempt: 1,
        outcome: { kind: "failed", class: "rate_limited", retryable: true, retryAfterMs: 1_000, message: "429 Too Many Requests" },
        calls: [{ turn: 1, model: "mock-1", usage: null, latencyMs: 3, status: "error", errorClass: "rate_limited", startedAt: 1_700_000_000_000 }],
      },
    ]);
  });
});

describe("consumeTasks with a fake SwarmRoom: inline retry rounds", () => {
  it("re-runs a 429 retried after 1 s in the same invocation as attempt 2: one claim and one record per round, then acks", async () => {
    const time = fakeClock();
    const a = new FakeRoom("sw_a", time.now);
    a.answer = retryFailures(1);
    const model = scriptedModel({ "prompt of t1": [RATE_LIMITED] });
    const { result, delays } = await runObserved([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], {
      ...BASE,
      concurrency: 4,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(a.claims).toEqual([["t1", "t2"], ["t1"]]);
    expect(a.claimOptions).toEqual([{ waves: 1 }, { waves: 1 }]);
    expect(a.records.map((round) => round.map((r) => [r.taskId, r.attempt, r.outcome.kind]))).toEqual([
      [
        ["t1", 1, "failed"],
        ["t2", 1, "succeeded"],
      ],
      [["t1", 2, "succeeded"]],
    ]);
    // The second claim came no earlier than the SwarmRoom's delay after its answer.
    expect(time.clock.sleeps).toEqual([1_000]);
    expect((a.claimedAt[1] ?? 0) - (a.answeredAt[0] ?? 0)).toBeGreaterThanOrEqual(1_000);
    expect(model.requests.map((r) => promptOf(r))).toEqual(["prompt of t1", "prompt of t2", "prompt of t1"]);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2"]);
    expect(result.retryMessages).toEqual([]);
    expect(delays.size).toBe(0);
  });

  it("acks a message whose tasks are all recorded before the swarm's inline round, and the rest after it", async () => {
    const events: string[] = [];
    const a = new FakeRoom("sw_a");
    a.answer = retryFailures(1);
    const claim = a.claim.bind(a);
    a.claim = (taskIds, options) => {
      events.push(`claim:${taskIds.join(",")}`);
      return claim(taskIds, options);
    };
    const model = scriptedModel({ "prompt of t1": [RATE_LIMITED] });
    await runObserved([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client), sleep: noWait }, events);
    expect(events).toEqual(["claim:t1,t2", "ack:m2", "claim:t1", "ack:m1"]);
  });

  it("keeps the concurrency bound across swarms and rounds", async () => {
    const rooms = ["sw_a", "sw_b"].map((id) => new FakeRoom(id));
    for (const room of rooms) room.answer = retryFailures(0, 3);
    // Every task's first two attempts fail: three rounds per swarm.
    const model = fakeModel(5, (request) => (model.requests.filter((r) => promptOf(r) === promptOf(request)).length <= 2 ? RATE_LIMITED : okResult(request)));
    const messages = rooms.flatMap((room) => [
      message(`${room.swarmId}-1`, room.swarmId, [`${room.swarmId}-t1`, `${room.swarmId}-t2`]),
      message(`${room.swarmId}-2`, room.swarmId, [`${room.swarmId}-t3`]),
    ]);
    const result = await run(messages, { ...BASE, concurrency: 2, rooms: roomsOf(...rooms), gateway: directGateway(model.client), sleep: noWait });
    for (const room of rooms) {
      const tasks = [1, 2, 3].map((n) => `${room.swarmId}-t${n}`);
      expect(room.claims).toEqual([tasks, tasks, tasks]);
      expect(room.records.map((round) => round.map((r) => r.attempt))).toEqual([
        [1, 1, 1],
        [2, 2, 2],
        [3, 3, 3],
      ]);
    }
    expect(model.requests).toHaveLength(18);
    expect(model.maxInFlight()).toBe(2);
    expect(result.explicitAcks).toHaveLength(4);
  });

  it("stops starting inline rounds after maxRounds and hands the rest to the queue with the SwarmRoom's delay", async () => {
    const a = new FakeRoom("sw_a");
    a.answer = retryFailures(1);
    const model = fakeModel(1, () => RATE_LIMITED);
    const { result, delays } = await runObserved([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      sleep: noWait,
      inlineBudget: { maxRounds: 2, startWithinMs: 120_000, endWithinMs: 720_000 },
    });
    expect(a.claims).toEqual([["t1", "t2"], ["t1", "t2"], ["t1", "t2"]]);
    expect(a.records).toHaveLength(3);
    expect(model.requests).toHaveLength(6);
    expect(result.explicitAcks).toEqual([]);
    expect(delays).toEqual(new Map([["m1", 1], ["m2", 1]]));
  });

  it("starts no inline round later than 120 s into the batch (default budget)", async () => {
    const time = fakeClock();
    const a = new FakeRoom("sw_a", time.now);
    a.answer = retryFailures(1);
    // Each call takes 50 s of batch time: rounds claim at 0, 51, 102 s; the next would start at 153 s.
    const model = fakeModel(1, () => {
      time.clock.t += 50_000;
      return RATE_LIMITED;
    });
    const { result, delays } = await runObserved([message("m1", "sw_a", ["t1"])], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(a.claims).toHaveLength(3);
    expect(a.records).toHaveLength(3);
    expect(result.explicitAcks).toEqual([]);
    expect(delays).toEqual(new Map([["m1", 1]]));
  });

  it("starts no inline round whose calls could run past 12 minutes of batch time (a long task's timeout)", async () => {
    const time = fakeClock();
    const a = new FakeRoom("sw_a", time.now);
    a.timeouts.set("t1", 720);
    a.answer = retryFailures(1);
    const model = fakeModel(1, () => RATE_LIMITED);
    const { delays } = await runObserved([message("m1", "sw_a", ["t1"])], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(a.claims).toHaveLength(1);
    expect(time.clock.sleeps).toEqual([]);
    expect(delays).toEqual(new Map([["m1", 1]]));
  });

  it("acks a message whose task the inline re-claim refuses as done, leased or parked, and retries one it defers", async () => {
    const a = new FakeRoom("sw_a");
    a.answer = (reports) => {
      // Between the rounds, the SwarmRoom changes its mind about every task.
      a.refusals.set("t1", "done");
      a.refusals.set("t2", "leased");
      a.refusals.set("t3", "parked");
      a.refusals.set("t4", "deferred");
      return retryFailures(1)(reports);
    };
    const model = fakeModel(1, (request) => (promptOf(request) === "prompt of t5" ? okResult(request) : RATE_LIMITED));
    const messages = ["t1", "t2", "t3", "t4", "t5"].map((t, i) => message(`m${i + 1}`, "sw_a", [t]));
    const result = await run(messages, { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client), sleep: noWait });
    expect(a.claims).toEqual([["t1", "t2", "t3", "t4", "t5"], ["t1", "t2", "t3", "t4"]]);
    expect(model.requests).toHaveLength(5);
    expect(a.records).toHaveLength(1);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2", "m3", "m5"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m4"]);
  });

  it("retries the message of a task whose inline re-claim RPC fails, and acks the rest", async () => {
    const a = new FakeRoom("sw_a");
    a.answer = retryFailures(1);
    a.claimErrorFrom = 2;
    const model = scriptedModel({ "prompt of t1": [RATE_LIMITED] });
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"])], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client), sleep: noWait });
    expect(a.claims).toHaveLength(2);
    expect(model.requests).toHaveLength(2);
    expect(result.explicitAcks).toEqual(["m2"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m1"]);
  });
});

describe("consumeTasks with a fake SwarmRoom: a run that throws halfway through the batch", () => {
  it("records the tasks that finished, leaves the one that threw unrecorded, and retries only its message", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const a = new FakeRoom("sw_a");
    const model = fakeModel(1, (request) => {
      if (promptOf(request) === "prompt of t2") throw new Error("unexpected bug in the agent loop");
      return okResult(request);
    });
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"]), message("m3", "sw_a", ["t3"])], {
      ...BASE,
      concurrency: 1,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
    });
    expect(model.requests).toHaveLength(3);
    expect(a.records.map((round) => round.map((r) => r.taskId))).toEqual([["t1", "t3"]]);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m3"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m2"]);
    expect(errors.mock.calls.some((args) => String(args[0]).includes("task_run_threw"))).toBe(true);
    errors.mockRestore();
  });

  it("retries a message that names a recorded task and a task that threw (never acks the unrecorded one)", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const a = new FakeRoom("sw_a");
    const model = fakeModel(1, (request) => {
      if (promptOf(request) === "prompt of t2") throw new TypeError("Cannot read properties of undefined");
      return okResult(request);
    });
    const result = await run([message("m1", "sw_a", ["t1", "t2"])], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client) });
    expect(a.records.map((round) => round.map((r) => r.taskId))).toEqual([["t1"]]);
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m1"]);
    vi.restoreAllMocks();
  });
});
