// A turn's call with its backup (limits.hedge): when the backup goes, which answer wins, that the
// loser is aborted and left to the room's note, and, through a lane and the gateway, that a backup
// takes a key's permit like any call (a key at its rpm sends none) and is billed as a row of its own.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createModelClient, type ModelCallResult, type ModelRequest } from "../../../src/model/model-client.ts";
import { BACKUP_MIN_MS, sendHedged, type BackupCall, type HedgedSend } from "../hedged-call.ts";
import { directGateway, FakeKeyPool, fakeKeyPools, toGatewayConfig } from "./fake-gateway.ts";
import { BASE, FakeRoom, fakeClock, okResult, promptOf, roomsOf, runObserved, ticketMessage, USAGE } from "./fake-room.ts";

const REQUEST: ModelRequest = {
  model: "mock-1",
  messages: [{ role: "user", content: "p" }],
  tools: null,
  parallelToolCalls: null,
  maxOutputTokens: 16,
  timeoutMs: 5_000,
  responseFormat: null,
};

function ok(text: string): ModelCallResult {
  return { ok: true, text, finishReason: "stop", usage: USAGE, toolCalls: [], latencyMs: 1, startedAt: 0 };
}

function failed(message: string): ModelCallResult {
  return { ok: false, error: { class: "upstream_error", retryable: true, retryAfterMs: null, message }, usage: null, latencyMs: 1, startedAt: 0 };
}

const ABORTED = failed("aborted");

/** A call the test ends by hand (or that ends ABORTED when its signal fires). */
interface PendingCall {
  request: ModelRequest;
  end(result: ModelCallResult): void;
  aborted: boolean;
}

/** A hedged send whose calls, timer and backup are all in the test's hands. */
function harness(options: { afterMs?: number | null; grant?: boolean } = {}) {
  const clock = { t: 0 };
  const backupTimeouts: number[] = [];
  const calls: PendingCall[] = [];
  const ended: { text: string; hedge: string | undefined }[] = [];
  const done: (ModelCallResult | null)[] = [];
  let fire: (() => void) | null = null;
  let prepares = 0;
  const io: HedgedSend = {
    send(request) {
      return new Promise((resolve) => {
        const call: PendingCall = { request, aborted: false, end: resolve };
        request.signal?.addEventListener("abort", () => {
          call.aborted = true;
          resolve(ABORTED);
        });
        calls.push(call);
      });
    },
    hedge: { afterMs: () => (options.afterMs === undefined ? 100 : options.afterMs) },
    now: () => clock.t,
    async prepareBackup(timeoutMs): Promise<BackupCall | null> {
      prepares += 1;
      backupTimeouts.push(timeoutMs);
      if (options.grant === false) return null;
      return {
        request: { ...REQUEST, messages: [{ role: "user", content: "backup" }] },
        done: async (result) => {
          done.push(result);
        },
      };
    },
    onEnded(result, hedge) {
      ended.push({ text: result.ok ? result.text : `error: ${result.error.message}`, hedge });
    },
    setTimer: (fn) => {
      fire = fn;
      return 1;
    },
    clearTimer: () => {
      fire = null;
    },
  };
  const flush = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));
  return {
    io,
    clock,
    backupTimeouts,
    calls,
    ended,
    done,
    prepares: () => prepares,
    /** The delay passes; resolves once the backup (if any) has been sent. */
    async due(): Promise<void> {
      fire?.();
      await flush();
      await flush();
    },
    flush,
  };
}

describe("a call and its backup", () => {
  it("without a delay in force, the call goes alone and no backup is asked for", async () => {
    const h = harness({ afterMs: null });
    const result = sendHedged(REQUEST, h.io);
    await h.flush();
    h.calls[0]?.end(ok("first"));
    expect(await result).toEqual(ok("first"));
    expect(h.calls).toHaveLength(1);
    expect(h.prepares()).toBe(0);
    expect(h.ended).toEqual([{ text: "first", hedge: undefined }]);
  });

  it("an answer before the delay sends no backup", async () => {
    const h = harness();
    const result = sendHedged(REQUEST, h.io);
    await h.flush();
    h.calls[0]?.end(ok("first"));
    expect(await result).toEqual(ok("first"));
    await h.due();
    expect(h.calls).toHaveLength(1);
    expect(h.prepares()).toBe(0);
  });

  it("past the delay a backup goes; its answer wins and the first call is aborted, left to the room's note", async () => {
    const h = harness();
    const result = sendHedged(REQUEST, h.io);
    await h.due();
    expect(h.calls).toHaveLength(2);
    expect(promptOf(h.calls[1]?.request as ModelRequest)).toBe("backup");
    h.calls[1]?.end(ok("backup answer"));
    expect(await result).toEqual(ok("backup answer"));
    expect(h.calls[0]?.aborted).toBe(true);
    // The aborted call is not reported: its note bills it at its worst case, marked estimated.
    expect(h.ended).toEqual([{ text: "backup answer", hedge: "won" }]);
    expect(h.done).toEqual([ok("backup answer")]);
  });

  it("the first call answering first wins, and the backup is aborted", async () => {
    const h = harness();
    const result = sendHedged(REQUEST, h.io);
    await h.due();
    h.calls[0]?.end(ok("first"));
    expect(await result).toEqual(ok("first"));
    expect(h.calls[1]?.aborted).toBe(true);
    expect(h.ended).toEqual([{ text: "first", hedge: undefined }]);
    // The backup's permit goes back with what the aborted call ended as.
    expect(h.done).toEqual([ABORTED]);
  });

  it("a failure does not win: the other call is waited for", async () => {
    const h = harness();
    const result = sendHedged(REQUEST, h.io);
    await h.due();
    h.calls[0]?.end(failed("502"));
    await h.flush();
    expect(h.calls[1]?.aborted).toBe(false);
    h.calls[1]?.end(ok("backup answer"));
    expect(await result).toEqual(ok("backup answer"));
    expect(h.ended).toEqual([
      { text: "error: 502", hedge: undefined },
      { text: "backup answer", hedge: "won" },
    ]);
  });

  it("when both fail, the first call's failure is the turn's, and both are reported", async () => {
    const h = harness();
    const result = sendHedged(REQUEST, h.io);
    await h.due();
    h.calls[1]?.end(failed("backup 503"));
    await h.flush();
    h.calls[0]?.end(failed("first 502"));
    expect(await result).toEqual(failed("first 502"));
    expect(h.ended).toEqual([
      { text: "error: backup 503", hedge: "lost" },
      { text: "error: first 502", hedge: undefined },
    ]);
  });

  it("a backup gets what is left of the first call's deadline, and none goes with under a second left", async () => {
    const h = harness();
    const result = sendHedged(REQUEST, h.io);
    h.clock.t = 1_200;
    await h.due();
    expect(h.backupTimeouts).toEqual([REQUEST.timeoutMs - 1_200]);
    h.calls[1]?.end(ok("backup answer"));
    await result;

    const late = harness();
    const lateResult = sendHedged(REQUEST, late.io);
    late.clock.t = REQUEST.timeoutMs - BACKUP_MIN_MS + 1;
    await late.due();
    expect(late.prepares()).toBe(0);
    late.calls[0]?.end(ok("first"));
    expect(await lateResult).toEqual(ok("first"));
  });

  it("a refused backup is asked for again at twice and four times the delay, then no more", async () => {
    const h = harness({ grant: false });
    const result = sendHedged(REQUEST, h.io);
    for (let i = 0; i < 4; i += 1) await h.due();
    expect(h.prepares()).toBe(3);
    expect(h.calls).toHaveLength(1);
    h.calls[0]?.end(ok("first"));
    expect(await result).toEqual(ok("first"));
  });

  it("a call refused before the swarm's tail asks again when the tail begins, not only at its next multiple", async () => {
    let beginTail: () => void = () => {};
    const tail = new Promise<void>((resolve) => {
      beginTail = resolve;
    });
    const h = harness({ grant: false });
    h.io.hedge = { afterMs: () => 100, tail: () => tail };
    const result = sendHedged(REQUEST, h.io);
    await h.due();
    expect(h.prepares()).toBe(1);
    // The tail begins before twice the delay: the call asks at once.
    beginTail();
    await h.flush();
    await h.flush();
    expect(h.prepares()).toBe(2);
    // Then at four times the delay, and no more.
    for (let i = 0; i < 3; i += 1) await h.due();
    expect(h.prepares()).toBe(3);
    h.calls[0]?.end(ok("first"));
    expect(await result).toEqual(ok("first"));
  });

  it("a call whose first ask was in the tail already asks at twice and four times the delay only", async () => {
    const h = harness({ grant: false });
    h.io.hedge = { afterMs: () => 100, tail: () => Promise.resolve() };
    const result = sendHedged(REQUEST, h.io);
    await h.flush();
    await h.due();
    expect(h.prepares()).toBe(1);
    await h.flush();
    await h.flush();
    expect(h.prepares()).toBe(1);
    for (let i = 0; i < 3; i += 1) await h.due();
    expect(h.prepares()).toBe(3);
    h.calls[0]?.end(ok("first"));
    expect(await result).toEqual(ok("first"));
  });

  it("no later ask once the room no longer offers backups", async () => {
    let offered: number | null = 100;
    const h = harness({ grant: false });
    h.io.hedge = { afterMs: () => offered };
    const result = sendHedged(REQUEST, h.io);
    await h.due();
    offered = null;
    await h.due();
    await h.due();
    expect(h.prepares()).toBe(1);
    h.calls[0]?.end(ok("first"));
    expect(await result).toEqual(ok("first"));
  });

  it("a backup the room (or a key, or the gate) refuses is not sent", async () => {
    const h = harness({ grant: false });
    const result = sendHedged(REQUEST, h.io);
    await h.due();
    expect(h.prepares()).toBe(1);
    expect(h.calls).toHaveLength(1);
    h.calls[0]?.end(ok("first"));
    expect(await result).toEqual(ok("first"));
  });
});

describe("a backup through a lane and the gateway", () => {
  /** t1's first call hangs until aborted; every later call answers at once. */
  function hangingFirstCall() {
    const requests: { keyId: string; request: ModelRequest }[] = [];
    const aborted: number[] = [];
    const answer = (keyId: string, request: ModelRequest): Promise<ModelCallResult> => {
      const n = requests.push({ keyId, request });
      if (n > 1) return Promise.resolve(okResult(request));
      return new Promise((resolve) => {
        request.signal?.addEventListener("abort", () => {
          aborted.push(n);
          resolve(ABORTED);
        });
      });
    };
    return { requests, aborted, answer };
  }

  it("sends one backup past the room's delay, bills it as the turn's backup row, and aborts the first call", async () => {
    const time = fakeClock();
    const room = new FakeRoom("sw_a", { tasks: ["t1"], clock: time.now, hedge: { afterMs: 5, limit: 1 } });
    const model = hangingFirstCall();
    const gateway = directGateway({ complete: (request) => model.answer("default", request) });
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });

    expect(model.requests).toHaveLength(2);
    expect(model.aborted).toEqual([1]);
    expect(room.hedgeStarts).toEqual([expect.objectContaining({ taskId: "t1", attempt: 1, turn: 1, hedge: true, model: "mock-1" })]);
    expect(room.task("t1")).toMatchObject({ state: "succeeded" });
    // The backup's row; the aborted first call is the room's to bill (its note), not the lane's.
    expect([...room.ledger.entries()]).toEqual([["t1:1:1:h", expect.objectContaining({ hedge: "won", status: "ok", usage: USAGE })]]);
  });

  it("a backup whose first call answers while the room grants it is not sent, and hands its header slot back", async () => {
    // One header slot, headers at once: the first call frees it at its headers, the backup takes it,
    // and the first call answers while the room is still granting the backup. The unsent backup kept
    // the slot, so the invocation had none left: t2's call waited for one until its latest start.
    let sent = 0;
    const client = createModelClient({
      baseURL: env.MODEL_BASE_URL,
      apiKey: env.MODEL_API_KEY,
      fetch: (input, init) => {
        sent += 1;
        const headers = new Headers(init?.headers);
        headers.set("x-mock-latency-ms", "300");
        return fetch(input, { ...init, headers });
      },
    });
    const room = new FakeRoom("sw_a", { tasks: ["t1", "t2"], hedge: { afterMs: 20, limit: 5 } });
    const hedgeCall = room.hedgeCall.bind(room);
    room.hedgeCall = async (start) => {
      await scheduler.wait(400);
      return hedgeCall(start);
    };
    await runObserved([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 1,
      headerSlots: 1,
      // A call waits for a header slot until its latest start, 2 s in (9 s less its 7 s timeout).
      pullForMs: 2_000,
      callsWithinMs: 9_000,
      rooms: roomsOf(room),
      gateway: directGateway(client),
    });

    // Each call's backup was granted after the call had answered, so none was sent.
    expect(room.hedgeStarts.map((start) => start.taskId)).toEqual(["t1", "t2"]);
    expect(sent).toBe(2);
    expect(room.task("t1")).toMatchObject({ state: "succeeded" });
    expect(room.task("t2")).toMatchObject({ state: "succeeded" });
  }, 15_000);

  it("takes a key's permit like any call: a key at its rpm sends no backup, and the room is not asked", async () => {
    const config = toGatewayConfig(
      JSON.stringify({
        upstreams: { deepseek: { base_url: "https://api.deepseek.test/v1", keys: [{ id: "ds-a", rpm: 60 }] } },
        models: { "deepseek-v3.2": { upstream: "deepseek", id: "deepseek-chat" } },
      }),
    );
    const pool = new FakeKeyPool("ds-a");
    // The first call's permit; then the key is at its rpm for a while.
    pool.script = ["grant"];
    pool.otherwise = { deny: "rpm", retryAfterMs: 30_000 };
    const time = fakeClock();
    const room = new FakeRoom("sw_a", { tasks: ["t1"], clock: time.now, hedge: { afterMs: 5, limit: 1 } });
    room.models.set("t1", "deepseek-v3.2");
    let release: (result: ModelCallResult) => void = () => {};
    const requests: ModelRequest[] = [];
    const gateway = {
      config,
      clientFor: () => ({
        complete: (request: ModelRequest) =>
          new Promise<ModelCallResult>((resolve) => {
            requests.push(request);
            release = resolve;
            // Let the delay pass (the backup is asked for and refused by the key), then answer.
            setTimeout(() => release(okResult(request)), 30);
          }),
      }),
      keyPools: fakeKeyPools([pool]),
      permitWaitMaxMs: 20_000,
    };
    await runObserved([ticketMessage("m1", "sw_a")], { ...BASE, rooms: roomsOf(room), gateway, now: time.now, sleep: time.sleep });

    expect(requests).toHaveLength(1);
    // The first call's acquire, then the backup's one try (no wait), denied.
    expect(pool.acquires).toHaveLength(2);
    expect(pool.releases).toHaveLength(1);
    expect(room.hedgeStarts).toEqual([]);
    expect(room.events).not.toContain("hedgeCall");
    expect(room.task("t1")).toMatchObject({ state: "succeeded" });
  });
});
