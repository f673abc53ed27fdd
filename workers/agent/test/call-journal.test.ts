// The call journal: calls reach recordCalls as they end, in batches at most every CALL_FLUSH_MS per
// swarm, each call id once, before the round's record; a failed flush or record loses nothing.
import { describe, expect, it, vi } from "vitest";
import { CALL_FLUSH_MS, createCallJournal } from "../call-journal.ts";
import type { CallReport } from "../call-journal.ts";
import { directGateway } from "./fake-gateway.ts";
import { BASE, FakeRoom, fakeModel, fakeTimers, message, okResult, promptOf, roomsOf, run, USAGE } from "./fake-room.ts";

/** A model whose every call takes `callMs` of fake time; `throwFor` prompts throw (a bug) after theirs. */
function timedModel(timers: ReturnType<typeof fakeTimers>, callMs: (prompt: string) => number, throwFor: ReadonlySet<string> = new Set()) {
  return fakeModel(0, (request) => {
    timers.advance(callMs(promptOf(request)));
    if (throwFor.has(promptOf(request))) throw new Error("unexpected bug in the agent loop");
    return okResult(request);
  });
}

function callReport(taskId: string, attempt = 1): CallReport {
  return { taskId, attempt, calls: [{ turn: 1, model: "mock-1", usage: USAGE, latencyMs: 5, status: "ok", errorClass: null, startedAt: 0 }] };
}

describe("call journal in consumeTasks", () => {
  it("flushes calls as they end, one recordCalls per swarm at most every CALL_FLUSH_MS, each call id once, ahead of the record", async () => {
    const timers = fakeTimers();
    const rooms = [new FakeRoom("sw_a", timers.now), new FakeRoom("sw_b", timers.now)];
    const tasks = Array.from({ length: 10 }, (_, i) => `t${i + 1}`);
    // One call at a time, 100 ms each: 20 calls over 2 s, then each swarm's record.
    const model = timedModel(timers, () => 100);
    const started = timers.now();
    const result = await run(
      rooms.map((room) => message(`m-${room.swarmId}`, room.swarmId, tasks)),
      { ...BASE, concurrency: 1, rooms: roomsOf(...rooms), gateway: directGateway(model.client), now: timers.now, sleep: timers.sleep, schedule: timers.schedule },
    );
    const elapsed = timers.now() - started;

    expect(model.requests).toHaveLength(20);
    expect(result.explicitAcks.sort()).toEqual(["m-sw_a", "m-sw_b"]);
    for (const room of rooms) {
      const journaled = room.journaledCallIds();
      // Batched, not one RPC per call, and never more often than CALL_FLUSH_MS.
      expect(room.journaled.length).toBeGreaterThanOrEqual(2);
      expect(room.journaled.length).toBeLessThanOrEqual(Math.floor(elapsed / CALL_FLUSH_MS) + 1);
      expect(room.journaled.length).toBeLessThan(journaled.length);
      for (let i = 1; i < room.journaledAt.length; i += 1) {
        expect((room.journaledAt[i] ?? 0) - (room.journaledAt[i - 1] ?? 0)).toBeGreaterThanOrEqual(CALL_FLUSH_MS);
      }
      // Each call id at most once across recordCalls; a call the journal had not sent yet when the
      // record went out is carried by the record alone; together they cover every call.
      expect(new Set(journaled).size).toBe(journaled.length);
      const recorded = (room.records[0] ?? []).map((r) => `${r.taskId}:${r.attempt}:1`);
      expect(recorded.sort()).toEqual(tasks.map((t) => `${t}:1:1`).sort());
      expect(journaled.every((id) => recorded.includes(id))).toBe(true);
      // Every call that ended CALL_FLUSH_MS before the record was journaled before it.
      expect(journaled.length).toBeGreaterThanOrEqual(tasks.length - Math.ceil(CALL_FLUSH_MS / 100) - 1);
      expect(room.events[0]).toBe("recordCalls");
      expect(room.events.at(-1)).toBe("recordResults");
    }
    // Nothing left armed once the batch returned.
    expect(timers.armed()).toBe(0);
  });

  it("makes no recordCalls for a batch whose record goes out within CALL_FLUSH_MS: the record carries its calls", async () => {
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", timers.now);
    const model = timedModel(timers, () => 10);
    await run([message("m1", "sw_a", ["t1", "t2", "t3"])], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: timers.now,
      sleep: timers.sleep,
      schedule: timers.schedule,
    });
    expect(a.records).toHaveLength(1);
    expect(a.journaled).toEqual([]);
    expect(timers.armed()).toBe(0);
  });

  it("has the earlier tasks' calls in recordCalls while a later task is still running, and when it throws and every recordResults fails", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", timers.now);
    a.recordFailures = 4;
    const journaledWhileT3Ran: string[][] = [];
    // t1 and t2 take 100 ms each; t3 runs 1 s (long enough for a flush), then the client throws.
    const model = fakeModel(0, (request) => {
      if (promptOf(request) === "prompt of t3") {
        timers.advance(1_000);
        journaledWhileT3Ran.push(a.journaledCallIds());
        throw new Error("unexpected bug in the agent loop");
      }
      timers.advance(100);
      return okResult(request);
    });
    const result = await run([message("m1", "sw_a", ["t1"]), message("m2", "sw_a", ["t2"]), message("m3", "sw_a", ["t3"])], {
      ...BASE,
      concurrency: 1,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: timers.now,
      sleep: timers.sleep,
      schedule: timers.schedule,
    });

    // Had the invocation died while t3 ran, t1's and t2's calls would already be in the ledger.
    expect(journaledWhileT3Ran).toEqual([["t1:1:1", "t2:1:1"]]);
    expect(a.events.indexOf("recordCalls")).toBeLessThan(a.events.indexOf("recordResults"));
    // Every record failed: the outcomes are unknown, every message is retried, yet the calls the
    // upstream billed reached recordCalls, once each.
    expect(a.records).toHaveLength(4);
    expect(a.answeredAt).toEqual([]);
    expect(a.journaledCallIds()).toEqual(["t1:1:1", "t2:1:1"]);
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages.map((m) => m.msgId).sort()).toEqual(["m1", "m2", "m3"]);
    expect(timers.armed()).toBe(0);
    errors.mockRestore();
  });

  it("hands a record's calls back to the journal when every recordResults fails, and sends them by the end of the batch", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", timers.now);
    a.recordFailures = 100;
    // Calls end within CALL_FLUSH_MS, so only the failed record could have carried them.
    const model = timedModel(timers, () => 10);
    const result = await run([message("m1", "sw_a", ["t1", "t2"])], {
      ...BASE,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: timers.now,
      // Back-off sleeps that take no fake time: no flush tick runs before the batch ends.
      sleep: async () => {},
      schedule: timers.schedule,
    });
    expect(a.records).toHaveLength(4);
    expect(a.journaledCallIds().sort()).toEqual(["t1:1:1", "t2:1:1"]);
    expect(a.journaled).toHaveLength(1);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m1"]);
    expect(timers.armed()).toBe(0);
    errors.mockRestore();
  });

  it("logs a failed flush, retries it on the next tick, and never holds back a task", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", timers.now);
    a.recordCallsFailures = 1;
    const model = timedModel(timers, () => 200);
    const result = await run([message("m1", "sw_a", ["t1", "t2", "t3", "t4", "t5"])], {
      ...BASE,
      concurrency: 1,
      rooms: roomsOf(a),
      gateway: directGateway(model.client),
      now: timers.now,
      sleep: timers.sleep,
      schedule: timers.schedule,
    });
    expect(result.explicitAcks).toEqual(["m1"]);
    // The first flush failed; its calls went again with the next one, once they answered.
    const [failed, retried] = a.journaled;
    expect(failed?.map((r) => r.taskId)).toEqual(["t1", "t2"]);
    expect(retried?.map((r) => r.taskId)).toEqual(["t1", "t2", "t3", "t4"]);
    expect((a.journaledAt[1] ?? 0) - (a.journaledAt[0] ?? 0)).toBeGreaterThanOrEqual(CALL_FLUSH_MS);
    expect(errors.mock.calls.some((args) => String(args[0]).includes("call_journal_flush_failed"))).toBe(true);
    errors.mockRestore();
  });
});

describe("createCallJournal", () => {
  it("stops: cancels its timer and flushes what is left once", async () => {
    const timers = fakeTimers();
    const a = new FakeRoom("sw_a", timers.now);
    const tally = { callFlushes: 0, callFlushErrors: 0 };
    const journal = createCallJournal({ rooms: roomsOf(a), schedule: timers.schedule, tally });
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
    const a = new FakeRoom("sw_a", timers.now);
    a.recordCallsFailures = 1;
    const tally = { callFlushes: 0, callFlushErrors: 0 };
    const journal = createCallJournal({ rooms: roomsOf(a), schedule: timers.schedule, tally });
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
