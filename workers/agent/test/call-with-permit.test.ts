// consumeTasks through a gateway with fake KeyPools, a fake SwarmRoom and a fake model per key:
// routing, key rotation, permit waits and their bounds, deferral without a call, and that every
// granted permit is released with the call's outcome and tokens.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ErrorClass } from "../../../src/core/error-class.ts";
import { orderKeys } from "../../../src/core/order-keys.ts";
import type { ModelCallResult, ModelClient, ModelRequest } from "../../../src/model/model-client.ts";
import type { ModelGateway } from "../call-with-permit.ts";
import { toPermitOutcome } from "../call-with-permit.ts";
import { FakeKeyPool, fakeKeyPools, toGatewayConfig } from "./fake-gateway.ts";
import { BASE as LANE_BASE, promptOf, FakeRoom, fakeClock, okResult, roomsOf, runObserved, ticketMessage, USAGE } from "./fake-room.ts";

const CONFIG = toGatewayConfig(
  JSON.stringify({
    upstreams: {
      deepseek: {
        base_url: "https://api.deepseek.test/v1",
        keys: [
          { id: "ds-a", rpm: 300, tpm: 100_000, max_in_flight: 8 },
          { id: "ds-b", rpm: 300 },
        ],
      },
      local: { base_url: "http://vllm.test/v1", keys: [{ id: "local-a" }] },
    },
    models: {
      "deepseek-v3.2": { upstream: "deepseek", id: "deepseek-chat" },
      "llama-3": { upstream: "local", id: "meta-llama/Llama-3-8B" },
    },
  }),
);
const KEY_IDS = ["ds-a", "ds-b"];
const MODEL = "deepseek-v3.2";
/** A lane that waits for no retry, so a deferred task is left waiting in the room and each test sees one attempt. */
const BASE = { ...LANE_BASE, idleWaitMaxMs: 0 } as const;

/** The key the task asks first, and the other one (the rotation is a hash of swarm and task). */
function keysOf(taskId: string, attempt = 1): [string, string] {
  const [first, second] = orderKeys(KEY_IDS, "sw_a", taskId, attempt);
  if (first === undefined || second === undefined) throw new Error("two keys expected");
  return [first, second];
}

/** Task ids of swarm sw_a whose first key is `keyId`. */
function tasksStartingOn(keyId: string, count: number): string[] {
  const out: string[] = [];
  for (let i = 1; out.length < count; i += 1) if (keysOf(`t${i}`)[0] === keyId) out.push(`t${i}`);
  return out;
}

interface KeyedCall {
  keyId: string;
  request: ModelRequest;
}

function failure(errorClass: ErrorClass, retryAfterMs: number | null = null, usage: ModelCallResult["usage"] = null): ModelCallResult {
  return {
    ok: false,
    error: { class: errorClass, retryable: errorClass === "rate_limited", retryAfterMs, message: `upstream said ${errorClass}` },
    usage,
    latencyMs: 4,
    startedAt: 1_700_000_000_000,
  };
}

function setup(options: { answer?: (request: ModelRequest, keyId: string) => ModelCallResult; permitWaitMaxMs?: number } = {}) {
  const events: string[] = [];
  const pools = new Map([...KEY_IDS, "local-a"].map((id) => [id, new FakeKeyPool(id, events)]));
  const calls: KeyedCall[] = [];
  const answer = options.answer ?? ((request: ModelRequest) => okResult(request));
  const gateway: ModelGateway = {
    config: CONFIG,
    clientFor(keyId): ModelClient {
      return {
        async complete(request) {
          calls.push({ keyId, request });
          events.push(`call:${keyId}`);
          return answer(request, keyId);
        },
      };
    },
    keyPools: fakeKeyPools([...pools.values()]),
    permitWaitMaxMs: options.permitWaitMaxMs ?? 20_000,
  };
  const pool = (id: string): FakeKeyPool => {
    const found = pools.get(id);
    if (found === undefined) throw new Error(`no pool ${id}`);
    return found;
  };
  return { events, pool, calls, gateway };
}

function roomOn(model: string, taskIds: string[], time: ReturnType<typeof fakeClock>): FakeRoom {
  const room = new FakeRoom("sw_a", { tasks: taskIds, clock: time.now });
  for (const taskId of taskIds) room.models.set(taskId, model);
  return room;
}

/** The retry actions the room answered (a deferred task waits in it for its delay). */
function retries(room: FakeRoom): { taskId: string; delaySeconds: number }[] {
  return room.answers.flatMap((a) => a.actions.filter((action) => action.action === "retry").map(({ taskId, delaySeconds }) => ({ taskId, delaySeconds })));
}

/** The task_batch log line's counters. */
function batchLog(log: ReturnType<typeof vi.spyOn>): Record<string, unknown> {
  for (const args of log.mock.calls) {
    const parsed: unknown = JSON.parse(String(args[0]));
    if (typeof parsed === "object" && parsed !== null && "event" in parsed && parsed.event === "task_batch") return { ...parsed };
  }
  throw new Error("no task_batch log line");
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a model call through the gateway", () => {
  it("takes a permit on the task's first key, calls the upstream's model id with that key, records the gateway name and releases with the call's tokens", async () => {
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { events, pool, calls, gateway } = setup();
    const [first, second] = keysOf("t1");
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });

    expect(events).toEqual([`acquire:${first}`, `call:${first}`, `release:${first}`]);
    // "sys" + "prompt of t1": (ceil(3/4) + 4) + (ceil(12/4) + 4) = 12 prompt tokens, + max_output_tokens 33.
    const limits = first === "ds-a" ? { rpm: 300, tpm: 100_000, maxInFlight: 8 } : { rpm: 300, tpm: null, maxInFlight: null };
    expect(pool(first).acquires).toEqual([{ limits, tokens: 45, leaseMs: 37_000 }]);
    expect(pool(second).acquires).toEqual([]);
    expect(calls).toEqual([
      {
        keyId: first,
        request: expect.objectContaining({
          model: "deepseek-chat",
          messages: [
            { role: "system", content: "sys" },
            { role: "user", content: "prompt of t1" },
          ],
          maxOutputTokens: 33,
          timeoutMs: 7_000,
        }),
      },
    ]);
    expect(pool(first).releases).toEqual([{ permitId: `${first}-permit-1`, tokens: USAGE.total_tokens, outcome: "ok", retryAfterMs: null }]);
    expect(room.reports()[0]?.calls).toEqual([expect.objectContaining({ model: MODEL, status: "ok", usage: USAGE })]);
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(time.clock.sleeps).toEqual([]);
  });

  it("turns to the next key when the first denies, without waiting, and calls with the key that granted", async () => {
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { events, pool, calls, gateway } = setup();
    const [first, second] = keysOf("t1");
    pool(first).script = [{ deny: "rpm", retryAfterMs: 500 }];
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });
    expect(events).toEqual([`acquire:${first}`, `acquire:${second}`, `call:${second}`, `release:${second}`]);
    expect(calls.map((c) => c.keyId)).toEqual([second]);
    expect(pool(first).releases).toEqual([]);
    expect(time.clock.sleeps).toEqual([]);
  });

  it("skips a quarantined key and one whose KeyPool RPC throws", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const time = fakeClock();
    const [onA, onB] = [tasksStartingOn("ds-a", 1)[0] ?? "", tasksStartingOn("ds-b", 1)[0] ?? ""];
    const room = roomOn(MODEL, [onA, onB], time);
    const { pool, calls, gateway } = setup();
    pool("ds-a").otherwise = { deny: "quarantined", retryAfterMs: null };
    pool("ds-b").script = ["throw"];
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 1,
      rooms: roomsOf(room),
      gateway,
      now: time.now,
      sleep: time.sleep,
    });
    // onA: ds-a quarantined → ds-b throws → … onB: ds-b grants. onA waits for nothing it can use, so it is deferred.
    expect(calls.map((c) => [promptOf(c.request), c.keyId])).toEqual([[`prompt of ${onB}`, "ds-b"]]);
    const deferred = room.reports().find((r) => r.taskId === onA);
    expect(deferred).toEqual({
      taskId: onA,
      attempt: 1,
      outcome: { kind: "deferred", retryAfterMs: 2_000, reason: "no key of upstream deepseek had a permit: quarantined, KeyPool unreachable" },
      calls: [],
    });
    // The quarantine is remembered for the batch: ds-a was asked once, not again for onB.
    expect(pool("ds-a").acquires).toHaveLength(1);
    // The deferred task waits in the room (the attempt gives its place in max_attempts back); the ticket is acked.
    expect(room.states()).toEqual({ [onA]: ["retry_wait", 1], [onB]: ["succeeded", 1] });
    expect(room.task(onA).freeAttempts).toBe(1);
    expect(retries(room)).toEqual([{ taskId: onA, delaySeconds: 2 }]);
    expect(result.explicitAcks).toEqual(["m1"]);
  });

  it("waits for the soonest key the KeyPools name, then calls, within PERMIT_WAIT_MAX_S", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { pool, calls, gateway } = setup({ permitWaitMaxMs: 2_000 });
    const [first, second] = keysOf("t1");
    pool(first).script = [{ deny: "rpm", retryAfterMs: 1_500 }, "grant"];
    pool(second).script = [
      { deny: "tpm", retryAfterMs: 800 },
      { deny: "tpm", retryAfterMs: 700 },
    ];
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      rooms: roomsOf(room),
      gateway,
      now: time.now,
      sleep: time.sleep,
      random: () => 0,
    });
    // Round 1: both deny, soonest 800 ms. Round 2 (first key's rpm denial still holds for 700 ms, so it is
    // not asked again): second denies for 700 ms. Round 3: first grants.
    expect(time.clock.sleeps).toEqual([800, 700]);
    expect(pool(first).acquires).toHaveLength(2);
    expect(pool(second).acquires).toHaveLength(2);
    expect(calls.map((c) => c.keyId)).toEqual([first]);
    expect(room.reports()[0]?.outcome.kind).toBe("succeeded");
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(batchLog(log)).toMatchObject({ ok: 1, deferred: 0, permitWaits: 2, permitWaitMs: 1_500 });
  });

  it("adds jitter of up to half the wait (at most 250 ms) so waiters on one key spread out", async () => {
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { pool, gateway } = setup();
    for (const id of KEY_IDS) pool(id).script = [{ deny: "in_flight", retryAfterMs: 250 }];
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep, random: () => 0.5 });
    expect(time.clock.sleeps).toEqual([250 + 63]);
  });

  it("hands the task back deferred, with no model call, when no permit comes within PERMIT_WAIT_MAX_S", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { pool, calls, gateway } = setup({ permitWaitMaxMs: 1_000 });
    pool("ds-a").otherwise = { deny: "rpm", retryAfterMs: 600 };
    pool("ds-b").otherwise = { deny: "tpm", retryAfterMs: 3_000 };
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      rooms: roomsOf(room),
      gateway,
      now: time.now,
      sleep: time.sleep,
      random: () => 0,
    });
    // One wait of 600 ms; a second would make 1,200 ms > 1,000.
    expect(time.clock.sleeps).toEqual([600]);
    expect(calls).toEqual([]);
    expect(room.reports()).toEqual([
      {
        taskId: "t1",
        attempt: 1,
        outcome: { kind: "deferred", retryAfterMs: 600, reason: expect.stringMatching(/^no key of upstream deepseek had a permit: (rpm, tpm|tpm, rpm)$/) },
        calls: [],
      },
    ]);
    expect(pool("ds-a").releases).toEqual([]);
    expect(pool("ds-b").releases).toEqual([]);
    // Handed back to the room, which hands it out again after 600 ms; the ticket is acked.
    expect(room.states()).toEqual({ t1: ["retry_wait", 1] });
    expect(retries(room)).toEqual([{ taskId: "t1", delaySeconds: 1 }]);
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(batchLog(log)).toMatchObject({ ok: 0, failed: 0, deferred: 1 });
  });

  it("runs a task deferred for no longer than the lane's idle wait again in the same lane, once the room hands it out", async () => {
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { pool, calls, gateway } = setup({ permitWaitMaxMs: 0 });
    for (const id of KEY_IDS) pool(id).script = [{ deny: "rpm", retryAfterMs: 1_200 }];
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      idleWaitMaxMs: 2_000,
      rooms: roomsOf(room),
      gateway,
      now: time.now,
      sleep: time.sleep,
    });
    expect(room.records.map((round) => round.map((r) => [r.attempt, r.outcome.kind]))).toEqual([[[1, "deferred"]], [[2, "succeeded"]]]);
    // The room's delay (the KeyPools' 1.2 s), then a permit at once, as the next attempt.
    expect(time.clock.sleeps).toEqual([1_200]);
    expect(calls).toHaveLength(1);
    expect(result.explicitAcks).toEqual(["m1"]);
  });

  it("defers at once with PERMIT_WAIT_MAX_S = 0", async () => {
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { pool, calls, gateway } = setup({ permitWaitMaxMs: 0 });
    for (const id of KEY_IDS) pool(id).otherwise = { deny: "cooldown", retryAfterMs: 4_000 };
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });
    expect(time.clock.sleeps).toEqual([]);
    expect(calls).toEqual([]);
    expect(room.reports()[0]?.outcome).toEqual({ kind: "deferred", retryAfterMs: 4_000, reason: "no key of upstream deepseek had a permit: cooldown" });
    expect(retries(room)).toEqual([{ taskId: "t1", delaySeconds: 4 }]);
  });

  it("does not wait past the task's lease: a call that could no longer finish inside it is deferred instead", async () => {
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    // The fake room leases for 60 s and the call's timeout is 7 s: a 55 s wait would end the call at 62 s.
    const { pool, calls, gateway } = setup({ permitWaitMaxMs: 120_000 });
    for (const id of KEY_IDS) pool(id).otherwise = { deny: "rpm", retryAfterMs: 55_000 };
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep, random: () => 0 });
    expect(time.clock.sleeps).toEqual([]);
    expect(calls).toEqual([]);
    expect(room.reports()[0]?.outcome).toMatchObject({ kind: "deferred", retryAfterMs: 55_000 });
  });

  it("does not wait past the invocation's callsEndBy: a call that could no longer end inside it is deferred instead", async () => {
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { pool, calls, gateway } = setup();
    for (const id of KEY_IDS) pool(id).otherwise = { deny: "rpm", retryAfterMs: 5_000 };
    await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      rooms: roomsOf(room),
      gateway,
      now: time.now,
      sleep: time.sleep,
      random: () => 0,
      // A 7 s call fits in 10 s, but not after a 5 s wait for a permit.
      callsWithinMs: 10_000,
    });
    expect(time.clock.sleeps).toEqual([]);
    expect(calls).toEqual([]);
    expect(room.reports()[0]?.outcome).toMatchObject({ kind: "deferred", retryAfterMs: 5_000 });
  });

  it("fails for good (auth) when every key is quarantined, and defers 2 s while every KeyPool RPC throws", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const time = fakeClock();
    const quarantined = setup();
    for (const id of KEY_IDS) quarantined.pool(id).otherwise = { deny: "quarantined", retryAfterMs: null };
    const roomQ = roomOn(MODEL, ["t1"], time);
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(roomQ), gateway: quarantined.gateway, now: time.now, sleep: time.sleep });
    // Only an operator can bring a rejected key back: deferring would only cycle to the dead-letter queue.
    expect(roomQ.reports()[0]?.outcome).toMatchObject({ kind: "failed", class: "auth", retryable: false });

    const down = setup();
    for (const id of KEY_IDS) down.pool(id).otherwise = "throw";
    const roomD = roomOn(MODEL, ["t1"], time);
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(roomD), gateway: down.gateway, now: time.now, sleep: time.sleep });
    expect(roomD.reports()[0]?.outcome).toEqual({
      kind: "deferred",
      retryAfterMs: 2_000,
      reason: "no key of upstream deepseek had a permit: KeyPool unreachable",
    });
    expect(time.clock.sleeps).toEqual([]);
    expect([...quarantined.calls, ...down.calls]).toEqual([]);
  });

  it("fails a call too large for the tpm of every key for good, without a call", async () => {
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { pool, calls, gateway } = setup();
    for (const id of KEY_IDS) pool(id).otherwise = { deny: "too_large", retryAfterMs: null };
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });
    expect(calls).toEqual([]);
    expect(room.reports()[0]).toEqual({
      taskId: "t1",
      attempt: 1,
      outcome: {
        kind: "failed",
        class: "bad_request",
        retryable: false,
        retryAfterMs: null,
        message: "the call reserves 45 tokens (prompt estimate + max_output_tokens), more than the tpm of any key of upstream deepseek",
      },
      calls: [],
    });
    expect(result.explicitAcks).toEqual(["m1"]);
  });

  it("shares a key's rpm denial across the batch: waiting tasks do not ask that KeyPool again before it lapses", async () => {
    const time = fakeClock();
    const tasks = tasksStartingOn("ds-a", 4);
    const room = roomOn(MODEL, tasks, time);
    const { pool, calls, gateway } = setup();
    pool("ds-a").otherwise = { deny: "rpm", retryAfterMs: 30_000 };
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, concurrency: 1, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });
    expect(pool("ds-a").acquires).toHaveLength(1);
    expect(pool("ds-b").acquires).toHaveLength(4);
    expect(calls.map((c) => c.keyId)).toEqual(["ds-b", "ds-b", "ds-b", "ds-b"]);
  });

  it("fails a model the gateway does not serve as not_found, with no permit and no call", async () => {
    const time = fakeClock();
    const room = roomOn("gpt-9", ["t1"], time);
    const { events, calls, gateway } = setup();
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });
    expect(events).toEqual([]);
    expect(calls).toEqual([]);
    expect(room.reports()).toEqual([
      {
        taskId: "t1",
        attempt: 1,
        outcome: { kind: "failed", class: "not_found", retryable: false, retryAfterMs: null, message: "model gpt-9 is not served by the gateway" },
        calls: [],
      },
    ]);
    expect(result.explicitAcks).toEqual(["m1"]);
  });

  it("calls an upstream with a single key without limits directly, with no KeyPool RPC", async () => {
    const time = fakeClock();
    const room = roomOn("llama-3", ["t1"], time);
    const { events, calls, gateway } = setup();
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });
    expect(events).toEqual(["call:local-a"]);
    expect(calls[0]?.request.model).toBe("meta-llama/Llama-3-8B");
    expect(room.reports()[0]?.calls[0]?.model).toBe("llama-3");
  });
});

describe("releasing a permit", () => {
  it.each([
    // HTTP errors answered before generation bill nothing: their reservation is given back (0).
    ["a 429", failure("rate_limited", 1_500), { tokens: 0, outcome: "rate_limited", retryAfterMs: 1_500 }],
    ["a 401", failure("auth"), { tokens: 0, outcome: "key_rejected", retryAfterMs: null }],
    ["insufficient_quota", failure("quota_exceeded"), { tokens: 0, outcome: "key_rejected", retryAfterMs: null }],
    ["a cut stream without usage", failure("truncated_stream"), { tokens: null, outcome: "error", retryAfterMs: null }],
    ["a timeout with partial usage", failure("upstream_timeout", null, USAGE), { tokens: 15, outcome: "error", retryAfterMs: null }],
    [
      "an answer without usage",
      {
        ...okResult({
          model: "x",
          messages: [{ role: "user", content: "p" }],
          tools: null,
          parallelToolCalls: null,
          maxOutputTokens: 1,
          timeoutMs: 1,
          responseFormat: null,
        }),
        usage: null,
      },
      { tokens: null, outcome: "ok", retryAfterMs: null },
    ],
  ] as const)("after %s: releases with the call's outcome, tokens and Retry-After", async (_label, answer, expected) => {
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { pool, gateway } = setup({ answer: () => answer });
    const [first] = keysOf("t1");
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });
    expect(pool(first).releases).toEqual([{ permitId: `${first}-permit-1`, ...expected }]);
  });

  it("releases as an error when the model client throws, and leaves the task unrecorded (its lease brings it back)", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1", "t2"], time);
    const { pool, events, gateway } = setup({
      answer: (request) => {
        if (promptOf(request) === "prompt of t1") throw new Error("bug in the agent loop");
        return okResult(request);
      },
    });
    const [first] = keysOf("t1");
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 1,
      rooms: roomsOf(room),
      gateway,
      now: time.now,
      sleep: time.sleep,
    });
    expect(events.slice(0, 3)).toEqual([`acquire:${first}`, `call:${first}`, `release:${first}`]);
    expect(pool(first).releases[0]).toEqual({ permitId: `${first}-permit-1`, tokens: null, outcome: "error", retryAfterMs: null });
    expect(room.reports().map((r) => r.taskId)).toEqual(["t2"]);
    expect(room.states()).toEqual({ t1: ["running", 1], t2: ["succeeded", 1] });
    expect(result.explicitAcks).toEqual(["m1"]);
  });

  it("logs a release that fails and still records and acks the task", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const time = fakeClock();
    const room = roomOn(MODEL, ["t1"], time);
    const { pool, gateway } = setup();
    for (const id of KEY_IDS) pool(id).releaseThrows = true;
    const { result } = await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });
    expect(room.reports()[0]?.outcome.kind).toBe("succeeded");
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(errors.mock.calls.some((args) => String(args[0]).includes('"rpc":"release"'))).toBe(true);
  });

  it("maps every error class to the key's outcome: 429 cools the key, 401/403/quota quarantine it, the rest leave it alone", () => {
    expect(toPermitOutcome(null)).toBe("error");
    expect(
      toPermitOutcome(
        okResult({
          model: "x",
          messages: [{ role: "user", content: "p" }],
          tools: null,
          parallelToolCalls: null,
          maxOutputTokens: 1,
          timeoutMs: 1,
          responseFormat: null,
        }),
      ),
    ).toBe("ok");
    const classes: ErrorClass[] = [
      "upstream_timeout",
      "upstream_connection",
      "upstream_error",
      "bad_request",
      "not_found",
      "context_length",
      "malformed_response",
      "truncated_stream",
    ];
    for (const errorClass of classes) expect(toPermitOutcome(failure(errorClass))).toBe("error");
    expect(toPermitOutcome(failure("rate_limited"))).toBe("rate_limited");
    expect(toPermitOutcome(failure("auth"))).toBe("key_rejected");
    expect(toPermitOutcome(failure("quota_exceeded"))).toBe("key_rejected");
  });
});
