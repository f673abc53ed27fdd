// consumeTasks against a fake SwarmRoom and a fake model: one lane per ticket, what a lane asks the
// room for, retries that wait in the room, the RPC failure paths a real Durable Object can't be
// made to produce on demand, and the concurrency bound.
import { describe, expect, it, vi } from "vitest";
import type { ModelCallResult } from "../../../src/model/model-client.ts";
import { directGateway } from "./fake-gateway.ts";
import {
  BASE,
  FakeRoom,
  fakeClock,
  fakeModel,
  noWait,
  okResult,
  promptOf,
  RATE_LIMITED,
  roomsOf,
  run,
  runObserved,
  scriptedModel,
  ticketMessage,
  USAGE,
} from "./fake-room.ts";

const reportsOf = (room: FakeRoom): [string, number, string][] => room.reports().map((r) => [r.taskId, r.attempt, r.outcome.kind]);

describe("consumeTasks with a fake SwarmRoom: one lane per ticket", () => {
  it("runs a lane per ticket that pulls its swarm's tasks, sends each task's settings to the model, records every outcome and acks", async () => {
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2", "t3"] });
    const b = new FakeRoom("sw_b", { tasks: ["t1"] });
    const model = fakeModel();
    const result = await run([ticketMessage("m1", "sw_a"), ticketMessage("m2", "sw_b"), ticketMessage("m3", "sw_a")], {
      ...BASE,
      rooms: roomsOf(a, b),
      gateway: directGateway(model.client),
      sleep: noWait,
    });
    expect(model.requests).toHaveLength(4);
    const { headerSlot, ...first } = model.requests.find((r) => promptOf(r) === "prompt of t1") ?? {};
    // A slot of the lane's own gate on connections waiting for headers (always taken, unbounded with headerSlots 0).
    expect(headerSlot).toBeDefined();
    expect(first).toEqual({
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
    expect(a.states()).toEqual({ t1: ["succeeded", 1], t2: ["succeeded", 1], t3: ["succeeded", 1] });
    expect(b.states()).toEqual({ t1: ["succeeded", 1] });
    expect(a.reports().find((r) => r.taskId === "t2")).toMatchObject({
      attempt: 1,
      outcome: { kind: "succeeded", output: "answer to prompt of t2", finishReason: "stop" },
      calls: [{ turn: 1, model: "mock-1", usage: USAGE, status: "ok", errorClass: null }],
    });
    // Every lane pulls under its own ticket and ends with a final pull.
    expect(new Set(a.pulls.map((p) => p.ticket))).toEqual(new Set(["m1", "m3"]));
    expect([...a.closedTickets].sort()).toEqual(["m1", "m3"]);
    expect([...b.closedTickets]).toEqual(["m2"]);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2", "m3"]);
    expect(result.retryMessages).toEqual([]);
  });

  it("calls the model and timeout the pull granted for each task (a fallback model, a long task's timeout), and records that model", async () => {
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2"] });
    a.models.set("t1", "fallback-1");
    a.timeouts.set("t2", 600);
    const model = fakeModel();
    await run([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client) });
    const byPrompt = new Map(model.requests.map((r) => [promptOf(r), r]));
    expect(byPrompt.get("prompt of t1")).toMatchObject({ model: "fallback-1", timeoutMs: 7_000 });
    // Not the swarm config's model or limits.timeout_s (mock-1, 7 s).
    expect(byPrompt.get("prompt of t2")).toMatchObject({ model: "mock-1", timeoutMs: 600_000 });
    const calls = new Map(a.reports().map((r) => [r.taskId, r.calls[0]?.model]));
    expect(calls).toEqual(
      new Map([
        ["t1", "fallback-1"],
        ["t2", "mock-1"],
      ]),
    );
  });

  it("runs a ticket delivered twice in one batch as one lane: each task once, both messages acked", async () => {
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2"] });
    const model = fakeModel();
    const result = await run([ticketMessage("m1", "sw_a", "tk1"), ticketMessage("m2", "sw_a", "tk1", 2)], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
    });
    expect(model.requests.map((r) => promptOf(r)).sort()).toEqual(["prompt of t1", "prompt of t2"]);
    expect(new Set(a.pulls.map((p) => p.ticket))).toEqual(new Set(["tk1"]));
    // One lane: one first pull, and one the room answers by closing the lane (no final pull).
    expect(a.pulls.filter((p) => p.final)).toHaveLength(0);
    expect(a.answers.filter((answer) => answer.closed === true)).toHaveLength(1);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2"]);
  });

  it("keeps at most `concurrency` model calls in flight in a lane, and keeps its slots full", async () => {
    const a = new FakeRoom("sw_a", { tasks: Array.from({ length: 24 }, (_, i) => `t${i + 1}`) });
    const model = fakeModel(10);
    const result = await run([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client), concurrency: 5 });
    expect(model.requests).toHaveLength(24);
    expect(model.maxInFlight()).toBe(5);
    expect(a.count("succeeded")).toBe(24);
    for (const pull of a.pulls) expect(pull.want).toBeLessThanOrEqual(5);
    expect(result.explicitAcks).toEqual(["m1"]);
  });

  it("asks for its free slots, says how many it has, and names its pool (by queue) and when its calls must end", async () => {
    const time = fakeClock();
    const started = time.now();
    const a = new FakeRoom("sw_a", { tasks: ["t1"], clock: time.now });
    const long = new FakeRoom("sw_l", { tasks: ["t1"], clock: time.now });
    await run([ticketMessage("m1", "sw_a", "tk1")], {
      ...BASE,
      concurrency: 5,
      rooms: roomsOf(a),
      gateway: directGateway(fakeModel().client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(a.pulls[0]).toEqual({
      ticket: "tk1",
      lane: expect.any(String),
      seq: 1,
      reports: [],
      want: 5,
      slots: 5,
      final: false,
      pool: "short",
      endBy: started + BASE.callsWithinMs,
      // The grant-noted calls it has started (none yet), and when the pull was built.
      started: [],
      sentAt: started,
      // Standby tasks on top of its free slots: before any timing, a wave of its concurrency (its
      // first tasks end together); and what it runs now (nothing yet: the room gives standby tasks
      // with window tasks only).
      standby: 5,
    });
    // Its last pull reports t1's end; the room answers stop and closes the lane (no final pull).
    expect(a.pulls.at(-1)).toMatchObject({ ticket: "tk1", final: false, reports: [expect.objectContaining({ taskId: "t1" })] });
    expect(a.answers.at(-1)).toMatchObject({ stop: true, closed: true });
    // One lane: one name; each answered pull moves its number on.
    expect(new Set(a.pulls.map((p) => p.lane)).size).toBe(1);
    expect(a.pulls.map((p) => p.seq)).toEqual(a.pulls.map((_p, i) => i + 1));

    await runObserved(
      [ticketMessage("m2", "sw_l", "tk2")],
      { ...BASE, rooms: roomsOf(long), gateway: directGateway(fakeModel().client), now: time.now, sleep: time.sleep },
      [],
      "edgeswarm-tasks-long",
    );
    expect(long.pulls.every((p) => p.pool === "long")).toBe(true);
  });

  it("acks the ticket of a swarm that does not exist, without a model call", async () => {
    const a = new FakeRoom("sw_a", { exists: false });
    const model = fakeModel();
    const result = await run([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client) });
    expect(model.requests).toEqual([]);
    expect(result.explicitAcks).toEqual(["m1"]);
  });

  it("acks a ticket that finds every task done or leased to another lane, without a model call", async () => {
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2"] });
    // Another lane holds t1; t2 has ended.
    await a.pull({ ticket: "other", reports: [], want: 2, slots: 2, final: false });
    const t2 = a.grants[1];
    if (t2 === undefined) throw new Error("no grant");
    await a.pull({
      ticket: "other",
      reports: [{ taskId: "t2", attempt: t2.attempt, outcome: { kind: "succeeded", output: "x", finishReason: "stop" }, calls: [] }],
      want: 0,
      slots: 2,
      final: false,
    });
    const model = fakeModel();
    const result = await run([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(a), gateway: directGateway(model.client) });
    expect(model.requests).toEqual([]);
    expect(a.states()).toEqual({ t1: ["running", 1], t2: ["succeeded", 1] });
    expect(result.explicitAcks).toEqual(["m1"]);
  });

  it("reports a failed call with its class and the usage the upstream sent", async () => {
    const a = new FakeRoom("sw_a", { tasks: ["t1"], maxAttempts: 1 });
    await run([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(a), gateway: directGateway(fakeModel(1, () => RATE_LIMITED).client), concurrency: 1 });
    expect(a.reports()).toEqual([
      {
        taskId: "t1",
        attempt: 1,
        outcome: { kind: "failed", class: "rate_limited", retryable: true, retryAfterMs: 1_000, message: "429 Too Many Requests" },
        calls: [{ turn: 1, model: "mock-1", usage: null, latencyMs: 3, status: "error", errorClass: "rate_limited", startedAt: 1_700_000_000_000 }],
      },
    ]);
    expect(a.states()).toEqual({ t1: ["failed", 1] });
  });
});

describe("consumeTasks with a fake SwarmRoom: retries wait in the room", () => {
  it("runs a 429 retried after 1 s again in the same lane as attempt 2, once the room's delay has passed", async () => {
    const time = fakeClock();
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2"], clock: time.now });
    const model = scriptedModel({ "prompt of t1": [RATE_LIMITED] });
    const { result, delays } = await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 4,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(a.grants.map((g) => [g.taskId, g.attempt])).toEqual([
      ["t1", 1],
      ["t2", 1],
      ["t1", 2],
    ]);
    expect(reportsOf(a).sort()).toEqual([
      ["t1", 1, "failed"],
      ["t1", 2, "succeeded"],
      ["t2", 1, "succeeded"],
    ]);
    // The lane slept only the room's delay (Retry-After 1 s) before pulling attempt 2.
    expect(time.clock.sleeps).toEqual([1_000]);
    const failedAt = a.pulledAt[a.pulls.findIndex((p) => p.reports.some((r) => r.outcome.kind === "failed"))] ?? 0;
    const regrantedAt = a.pulledAt[a.answers.findIndex((answer) => answer.granted.some((g) => g.attempt === 2))] ?? 0;
    expect(regrantedAt - failedAt).toBeGreaterThanOrEqual(1_000);
    expect(model.requests.map((r) => promptOf(r))).toEqual(["prompt of t1", "prompt of t2", "prompt of t1"]);
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(delays.size).toBe(0);
  });

  it("ends the lane without sleeping when the next retry is due after idleWaitMaxMs: the ticket is acked, the task waits in the room", async () => {
    const time = fakeClock();
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2"], clock: time.now, retryDelayMs: 9_000 });
    const model = scriptedModel({ "prompt of t1": [RATE_LIMITED] });
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(model.requests).toHaveLength(2);
    expect(time.clock.sleeps).toEqual([]);
    expect(a.states()).toEqual({ t1: ["retry_wait", 1], t2: ["succeeded", 1] });
    expect(a.answers.flatMap((answer) => answer.actions)).toContainEqual({ taskId: "t1", action: "retry", delaySeconds: 9 });
    expect(a.pulls.at(-1)?.final).toBe(true);
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(result.retryMessages).toEqual([]);
  });

  it("keeps the concurrency bound across retries", async () => {
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2", "t3"], maxAttempts: 3 });
    // Every task's first two attempts fail; their retries are due at once.
    const due: ModelCallResult = {
      ok: false,
      error: { class: "rate_limited", retryable: true, retryAfterMs: 0, message: "429" },
      usage: null,
      latencyMs: 3,
      startedAt: 0,
    };
    const model = fakeModel(5, (request) => (model.requests.filter((r) => promptOf(r) === promptOf(request)).length <= 2 ? due : okResult(request)));
    const acked: string[] = [];
    // A lane the room told to stop (every open task leased) leaves a retry of its own for a fresh
    // ticket, which the room issues: deliver tickets until every task has ended.
    for (let n = 1; n <= 5 && a.count("succeeded") < 3; n += 1) {
      const result = await run([ticketMessage(`m${n}`, "sw_a")], {
        ...BASE,
        concurrency: 2,
        rooms: roomsOf(a),
        gateway: directGateway(model.client),
        sleep: noWait,
      });
      acked.push(...result.explicitAcks);
    }
    expect(a.states()).toEqual({ t1: ["succeeded", 3], t2: ["succeeded", 3], t3: ["succeeded", 3] });
    expect(model.requests).toHaveLength(9);
    expect(model.maxInFlight()).toBe(2);
    expect(acked.length).toBeGreaterThanOrEqual(1);
  });

  it("starts no task whose calls could outlast the invocation (callsEndBy): the room keeps it for another lane", async () => {
    const time = fakeClock();
    const a = new FakeRoom("sw_a", { tasks: ["t1"], clock: time.now });
    a.timeouts.set("t1", 720);
    const model = fakeModel();
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      callsWithinMs: 600_000,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(model.requests).toEqual([]);
    expect(time.clock.sleeps).toEqual([]);
    expect(a.states()).toEqual({ t1: ["pending", 0] });
    expect(result.explicitAcks).toEqual(["m1"]);
  });
});

describe("consumeTasks with a fake SwarmRoom: pulls that fail", () => {
  it("retries the ticket, with no model call, when no pull reaches the room in 4 tries, and acks another swarm's", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const time = fakeClock();
    const a = new FakeRoom("sw_a", { tasks: ["t1"], clock: time.now });
    const b = new FakeRoom("sw_b", { tasks: ["t1"], clock: time.now });
    a.failPull = () => true;
    const model = fakeModel();
    const result = await run([ticketMessage("m1", "sw_a"), ticketMessage("m2", "sw_b")], {
      ...BASE,
      rooms: roomsOf(a, b),
      gateway: directGateway(model.client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(a.pulls).toHaveLength(4);
    expect(model.requests.map((r) => promptOf(r))).toEqual(["prompt of t1"]);
    expect(b.states()).toEqual({ t1: ["succeeded", 1] });
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m1"]);
    expect(result.explicitAcks).toEqual(["m2"]);
    vi.restoreAllMocks();
  });

  it("retries a failed pull with the same reports, 100-800 ms apart, and the outcome is recorded once", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const time = fakeClock();
    const a = new FakeRoom("sw_a", { tasks: ["t1"], clock: time.now });
    // The pull that carries t1's outcome fails twice.
    a.failPull = (n) => n === 2 || n === 3;
    const result = await run([ticketMessage("m1", "sw_a")], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(fakeModel().client),
      now: time.now,
      sleep: time.sleep,
    });
    expect(a.records).toHaveLength(3);
    expect(a.records[1]).toEqual(a.records[0]);
    expect(a.records[2]).toEqual(a.records[0]);
    expect(time.clock.sleeps).toHaveLength(2);
    for (const ms of time.clock.sleeps) {
      expect(ms).toBeGreaterThanOrEqual(100);
      expect(ms).toBeLessThanOrEqual(800);
    }
    expect(a.states()).toEqual({ t1: ["succeeded", 1] });
    expect([...a.ledger.keys()]).toEqual(["t1:1:1"]);
    expect(result.explicitAcks).toEqual(["m1"]);
    vi.restoreAllMocks();
  });
});

describe("consumeTasks with a fake SwarmRoom: a run that throws halfway through a lane", () => {
  it("records the tasks that finished, leaves the one that threw leased and unrecorded (its lease brings it back), and acks", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2", "t3"] });
    const model = fakeModel(1, (request) => {
      if (promptOf(request) === "prompt of t2") throw new Error("unexpected bug in the agent loop");
      return okResult(request);
    });
    const result = await run([ticketMessage("m1", "sw_a")], { ...BASE, concurrency: 1, rooms: roomsOf(a), gateway: directGateway(model.client) });
    expect(model.requests).toHaveLength(3);
    expect(a.reports().map((r) => r.taskId)).toEqual(["t1", "t3"]);
    expect(a.states()).toEqual({ t1: ["succeeded", 1], t2: ["running", 1], t3: ["succeeded", 1] });
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(errors.mock.calls.some((args) => String(args[0]).includes("task_run_threw"))).toBe(true);
    errors.mockRestore();
  });
});
