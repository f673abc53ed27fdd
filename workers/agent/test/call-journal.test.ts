// The call journal: calls reach recordCalls as they end, in batches at most every CALL_FLUSH_MS per
// swarm, each call id once, ahead of the pull that carries their task's outcome; a failed flush or
// pull loses nothing.
import { describe, expect, it, vi } from "vitest";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import type { ModelCallResult, ModelRequest } from "../../../src/model/model-client.ts";
import { CALL_FLUSH_MS, createCallJournal } from "../call-journal.ts";
import type { CallReport } from "../call-journal.ts";
import type { ReleaseRequest } from "../../../src/core/key-pool-contract.ts";
import { directGateway, FakeKeyPool, fakeKeyPools, toGatewayConfig } from "./fake-gateway.ts";
import { BASE, FakeRoom, fakeModel, fakeTimers, okResult, promptOf, roomsOf, run, ticketMessage, USAGE } from "./fake-room.ts";

/** A model whose every call takes `callMs` of fake time; `throwFor` prompts throw (a bug) after theirs. */
function timedModel(timers: ReturnType<typeof fakeTimers>, callMs: (prompt: string) => number, throwFor: ReadonlySet<string> = new Set()) {
  return fakeModel(0, (request) => {
    timers.advance(callMs(promptOf(request)));
    if (throwFor.has(promptOf(request))) throw new Error("unexpected bug in the agent loop");
    return okResult(request);
  });
}

/** The turn a request is for: one more than the assistant messages it carries. */
const turnOf = (request: ModelRequest): number => request.messages.filter((m) => m.role === "assistant").length + 1;

/** An agent that asks for one scratchpad_put per turn for `toolTurns` turns, then answers; each call takes `callMs` of fake time. */
function agentModel(
  timers: ReturnType<typeof fakeTimers>,
  callMs: number,
  toolTurns: number,
  options: { throwAtTurn?: number; onCall?: (turn: number) => void } = {},
) {
  return fakeModel(0, (request): ModelCallResult => {
    const turn = turnOf(request);
    timers.advance(callMs);
    options.onCall?.(turn);
    if (turn === options.throwAtTurn) throw new Error("isolate killed mid-loop");
    if (turn > toolTurns) return okResult(request);
    const args = { key: `k${turn}`, value: "noted" };
    return {
      ok: true,
      text: "",
      finishReason: "tool_calls",
      usage: USAGE,
      toolCalls: [{ id: `call_${turn}`, name: "scratchpad_put", rawArguments: JSON.stringify(args), arguments: { ok: true, value: args } }],
      latencyMs: callMs,
      startedAt: 0,
    };
  });
}

/** A room whose tasks are multi-turn agents with the scratchpad tool. */
function agentRoom(swarmId: string, tasks: string[], timers: ReturnType<typeof fakeTimers>): FakeRoom {
  return new FakeRoom(swarmId, {
    tasks,
    clock: timers.now,
    config: { tools: ["scratchpad"], limits: LimitsSchema.parse({ timeout_s: 7, max_output_tokens: 33, max_turns: 10 }) },
  });
}

function callReport(taskId: string, attempt = 1): CallReport {
  return { taskId, attempt, calls: [{ turn: 1, model: "mock-1", usage: USAGE, latencyMs: 5, status: "ok", errorClass: null, startedAt: 0 }] };
}

describe("call journal in consumeTasks", () => {
  it("journals a multi-turn agent's calls as its turns end, one recordCalls per swarm at most every CALL_FLUSH_MS, each call id once, ahead of the pull with its outcome", async () => {
    const timers = fakeTimers();
    const rooms = [agentRoom("sw_a", ["t1"], timers), agentRoom("sw_b", ["t1"], timers)];
    // 9 tool turns and the answer, 100 ms each: 20 calls over 2 s, one lane per swarm.
    const model = agentModel(timers, 100, 9);
    const started = timers.now();
    const result = await run(
      rooms.map((room) => ticketMessage(`m-${room.swarmId}`, room.swarmId)),
      {
        ...BASE,
        concurrency: 1,
        rooms: roomsOf(...rooms),
        gateway: directGateway(model.client),
        now: timers.now,
        sleep: timers.sleep,
        schedule: timers.schedule,
      },
    );
    const elapsed = timers.now() - started;

    expect(model.requests).toHaveLength(20);
    expect(result.explicitAcks.sort()).toEqual(["m-sw_a", "m-sw_b"]);
    for (const room of rooms) {
      const journaled = room.journaledCallIds();
      const turns = Array.from({ length: 10 }, (_, i) => `t1:1:${i + 1}`);
      // Batched, not one RPC per call, and never more often than CALL_FLUSH_MS.
      expect(room.journaled.length).toBeGreaterThanOrEqual(2);
      expect(room.journaled.length).toBeLessThanOrEqual(Math.floor(elapsed / CALL_FLUSH_MS) + 1);
      expect(room.journaled.length).toBeLessThan(journaled.length);
      for (let i = 1; i < room.journaledAt.length; i += 1) {
        expect((room.journaledAt[i] ?? 0) - (room.journaledAt[i - 1] ?? 0)).toBeGreaterThanOrEqual(CALL_FLUSH_MS);
      }
      // Each call id at most once across recordCalls; the pull with the outcome carries all of them.
      expect(new Set(journaled).size).toBe(journaled.length);
      const carried = room.reports().flatMap((r) => r.calls.map((c) => `${r.taskId}:${r.attempt}:${c.turn}`));
      expect(carried.sort()).toEqual([...turns].sort());
      expect(journaled.every((id) => turns.includes(id))).toBe(true);
      // Every call that ended CALL_FLUSH_MS before the outcome was journaled before it.
      expect(journaled.length).toBeGreaterThanOrEqual(turns.length - Math.ceil(CALL_FLUSH_MS / 100) - 1);
      expect(room.events.indexOf("recordCalls")).toBeLessThan(room.events.lastIndexOf("pull"));
      expect(room.states()).toEqual({ t1: ["succeeded", 1] });
      expect(room.ledger.size).toBe(10);
    }
    // Nothing left armed once the batch returned.
    expect(timers.armed()).toBe(0);
  });

  it("sends a tool turn's call with its turn's checkpoint, never ahead of it: a flush while the key's permit is handed back carries neither", async () => {
    const timers = fakeTimers();
    const room = agentRoom("sw_a", ["t1"], timers);
    // The key's KeyPool answers the permit's release a flush interval later (a slow RPC): the
    // journal's timer fires between the call's end and the turn's checkpoint.
    class SlowRelease extends FakeKeyPool {
      override async release(request: ReleaseRequest): Promise<void> {
        timers.advance(CALL_FLUSH_MS);
        return super.release(request);
      }
    }
    const model = agentModel(timers, 100, 3);
    const gateway = {
      config: toGatewayConfig(
        JSON.stringify({
          upstreams: { u: { base_url: "http://u.test/v1", keys: [{ id: "k1", rpm: 600 }] } },
          models: { "mock-1": { upstream: "u", id: "m" } },
        }),
      ),
      clientFor: () => model.client,
      keyPools: fakeKeyPools([new SlowRelease("k1")]),
      permitWaitMaxMs: 20_000,
    };
    await run([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 1,
      rooms: roomsOf(room),
      gateway,
      now: timers.now,
      sleep: timers.sleep,
      schedule: timers.schedule,
    });

    expect(room.states()).toEqual({ t1: ["succeeded", 1] });
    const flushes = room.journaled.flat();
    // The three tool turns' calls were journaled while the task ran, each with the checkpoint of
    // its turn (or a later one): a machine that dies after any flush resumes the task past every
    // call that flush made paid.
    const toolTurns = flushes.flatMap((report) =>
      report.calls.filter((call) => call.turn <= 3).map((call) => ({ turn: call.turn, checkpointed: report.checkpoint?.turns ?? 0 })),
    );
    expect(toolTurns.map((t) => t.turn).sort()).toEqual([1, 2, 3]);
    for (const { turn, checkpointed } of toolTurns) expect(checkpointed).toBeGreaterThanOrEqual(turn);
  });

  it("makes no recordCalls when the pull with a task's outcome goes out within CALL_FLUSH_MS: the pull carries its calls", async () => {
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2", "t3"], clock: timers.now });
    const model = timedModel(timers, () => 10);
    await run([ticketMessage("m1", "sw_a")], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: timers.now,
      sleep: timers.sleep,
      schedule: timers.schedule,
    });
    expect(
      a
        .reports()
        .map((r) => r.taskId)
        .sort(),
    ).toEqual(["t1", "t2", "t3"]);
    expect(a.journaled).toEqual([]);
    expect(timers.armed()).toBe(0);
  });

  it("has the finished tasks' calls in recordCalls while a later task still runs, when every pull carrying them fails", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2", "t3"], clock: timers.now });
    // The first pull (the grants) answers; every pull after it fails.
    a.failPull = (n) => n >= 2;
    const journaledWhileT3Ran: string[][] = [];
    // t1 and t2 take 100 ms each; t3 runs 3 s (long enough for a flush: the swarm has nothing
    // left to hand out, so the journal waits for the tail's pulls, up to 2 s), then the client throws.
    const model = fakeModel(0, (request) => {
      if (promptOf(request) === "prompt of t3") {
        timers.advance(3_000);
        journaledWhileT3Ran.push(a.journaledCallIds());
        throw new Error("unexpected bug in the agent loop");
      }
      timers.advance(100);
      return okResult(request);
    });
    const result = await run([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 3,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: timers.now,
      // Back-off sleeps that take no fake time: only the calls move the clock.
      sleep: async () => {},
      schedule: timers.schedule,
    });

    // Had the invocation died while t3 ran, t1's and t2's calls would already be in the ledger.
    expect(journaledWhileT3Ran).toEqual([["t1:1:1", "t2:1:1"]]);
    expect(a.events.indexOf("recordCalls")).toBeGreaterThan(0);
    // No outcome was recorded (their leases bring the tasks back), yet the calls the upstream
    // billed reached recordCalls, once each.
    expect(a.answers).toHaveLength(1);
    expect(a.states()).toEqual({ t1: ["running", 1], t2: ["running", 1], t3: ["running", 1] });
    expect(a.journaledCallIds()).toEqual(["t1:1:1", "t2:1:1"]);
    expect([...a.ledger.keys()].sort()).toEqual(["t1:1:1", "t2:1:1"]);
    // The lane reached the room (its first pull): the ticket is acked, not cycled to the DLQ.
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(timers.armed()).toBe(0);
    errors.mockRestore();
  });

  it("sends an answer's call with the answer's checkpoint: when the outcome never reaches the room, the next attempt finishes from it without calling the model", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", { tasks: ["t1", "t2"], clock: timers.now, leaseMs: 10_000 });
    // The first pull (the grants) answers; every pull after it fails, as if the machine died with
    // the outcomes in hand. t2 runs long enough for a flush.
    a.failPull = (n) => n >= 2;
    const first = fakeModel(0, (request) => {
      timers.advance(promptOf(request) === "prompt of t2" ? 3_000 : 100);
      return okResult(request);
    });
    await run([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 2,
      rooms: roomsOf(a),
      gateway: directGateway(first.client),
      now: timers.now,
      sleep: async () => {},
      schedule: timers.schedule,
    });
    expect(a.states()).toEqual({ t1: ["running", 1], t2: ["running", 1] });
    // Each call reached the room in the same recordCalls as its task's answer.
    for (const report of a.journaled.flat()) {
      expect(report.calls.map((c) => c.turn)).toEqual([1]);
      expect(JSON.parse(report.checkpoint?.answer_json ?? "null")).toEqual({
        text: `answer to prompt of ${report.taskId}`,
        finishReason: "stop",
        toolCallsOnly: false,
      });
    }
    expect(a.journaledCallIds().sort()).toEqual(["t1:1:1", "t2:1:1"]);

    // The leases run out; the next lane's attempts are finished from the answers.
    a.failPull = () => false;
    timers.advance(10_000);
    const second = fakeModel(0, okResult);
    await run([ticketMessage("m2", "sw_a")], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(second.client),
      now: timers.now,
      sleep: timers.sleep,
      schedule: timers.schedule,
    });
    expect(second.requests).toEqual([]);
    expect(a.states()).toEqual({ t1: ["succeeded", 2], t2: ["succeeded", 2] });
    const outcomes = a.reports().filter((r) => r.attempt === 2);
    expect(outcomes.map((r) => [r.taskId, r.outcome, r.calls])).toEqual(
      ["t1", "t2"].map((taskId) => [taskId, { kind: "succeeded", output: `answer to prompt of ${taskId}`, finishReason: "stop" }, []]),
    );
    // Every call the upstream served is on the bill once, none twice.
    expect([...a.ledger.keys()].sort()).toEqual(["t1:1:1", "t2:1:1"]);
    errors.mockRestore();
  });

  it("hands a pull's calls back to the journal when all its attempts fail, and sends them by the end of the batch", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", { tasks: ["t1"], clock: timers.now });
    a.failPull = (n) => n >= 2;
    // The call ends within CALL_FLUSH_MS, so only the failed pulls could have carried it.
    const model = timedModel(timers, () => 10);
    const result = await run([ticketMessage("m1", "sw_a")], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: timers.now,
      // Back-off sleeps that take no fake time: no flush tick runs before the batch ends.
      sleep: async () => {},
      schedule: timers.schedule,
    });
    expect(a.records).toHaveLength(4);
    expect(a.journaledCallIds()).toEqual(["t1:1:1"]);
    expect(a.journaled).toHaveLength(1);
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(timers.armed()).toBe(0);
    errors.mockRestore();
  });

  it("logs a failed flush, retries it on the next tick, and never holds back a task", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const timers = fakeTimers();
    const a = agentRoom("sw_a", ["t1"], timers);
    a.recordCallsFailures = 1;
    // 4 tool turns and the answer, 200 ms each.
    const model = agentModel(timers, 200, 4);
    const result = await run([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 1,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: timers.now,
      sleep: timers.sleep,
      schedule: timers.schedule,
    });
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(a.states()).toEqual({ t1: ["succeeded", 1] });
    // The first flush failed; its calls went again with the next one, with the calls since.
    const [failed, retried] = a.journaled;
    expect(failed?.flatMap((r) => r.calls.map((c) => c.turn))).toEqual([1, 2]);
    expect(retried?.flatMap((r) => r.calls.map((c) => c.turn)).slice(0, 3)).toEqual([1, 2, 3]);
    expect((a.journaledAt[1] ?? 0) - (a.journaledAt[0] ?? 0)).toBeGreaterThanOrEqual(CALL_FLUSH_MS);
    expect(errors.mock.calls.some((args) => String(args[0]).includes("call_journal_flush_failed"))).toBe(true);
    expect(a.ledger.size).toBe(5);
    errors.mockRestore();
  });
});

describe("createCallJournal", () => {
  it("stops: cancels its timer and flushes what is left once", async () => {
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", { clock: timers.now });
    const tally = { callFlushes: 0, callFlushErrors: 0 };
    const journal = createCallJournal({ rooms: roomsOf(a), schedule: timers.schedule, now: timers.now, tally });
    journal.append("sw_a", callReport("t1"));
    journal.append("sw_a", callReport("t2"));
    expect(timers.armed()).toBe(1);
    await journal.stop();
    expect(timers.armed()).toBe(0);
    expect(a.journaled).toEqual([[callReport("t1"), callReport("t2")]]);
    expect(tally).toEqual({ callFlushes: 1, callFlushErrors: 0 });
  });

  it("sends nothing a record carried and answered, even if a flush of it failed meanwhile", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", { clock: timers.now });
    a.recordCallsFailures = 1;
    const tally = { callFlushes: 0, callFlushErrors: 0 };
    const journal = createCallJournal({ rooms: roomsOf(a), schedule: timers.schedule, now: timers.now, tally });
    journal.append("sw_a", callReport("t1"));
    timers.advance(CALL_FLUSH_MS);
    // The flush is in flight (it will fail) while the record carries t1.
    await journal.carry("sw_a", [callReport("t1")], async () => "recorded");
    journal.append("sw_a", callReport("t2"));
    await journal.stop();
    expect(a.journaledCallIds()).toEqual(["t1:1:1", "t2:1:1"]);
    expect(tally).toEqual({ callFlushes: 1, callFlushErrors: 1 });
    errors.mockRestore();
  });
});
