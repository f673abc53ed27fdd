// The pull dispatch end to end: lanes (run-lane.ts) under consumeTasks, mostly against the real
// SwarmRoom (auxiliary orchestrator Worker) and the mock model: duplicate tickets, a consumer that
// dies mid-pull, pulls that fail, a cancel while a lane runs, coalescing, and a lane that stops
// before its invocation's limits. Fake rooms and clocks where a fault must come on cue.
import { coalesceMs, type LaneShape } from "../run-lane.ts";
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { MessageBatchMessage, QueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { STARTED_LIST_MS, type PullRequest, type PullResponse } from "../../../src/core/swarm-contract.ts";
import { createModelClient } from "../../../src/model/model-client.ts";
import type { ModelCallResult, ModelClient, ModelRequest } from "../../../src/model/model-client.ts";
import { consumeTasks, type ConsumeTasksDeps } from "../consume-tasks.ts";
import { toSwarmRooms, type SwarmRoomRpc, type SwarmRooms } from "../swarm-rooms.ts";
import { directGateway } from "./fake-gateway.ts";
import { BASE, FakeRoom, fakeClock, fakeModel, okResult, promptOf, roomsOf, run, ticketMessage } from "./fake-room.ts";
import { LANE_DEFAULTS, ledgerRows, messageIds, mockStats, startNumberedSwarm, startRoomSwarm, tickets, waitFor, type NumberedSwarm } from "./room-swarm.ts";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";

const TENANT = "tk_lane_test";

type Swarm = NumberedSwarm;

const startSwarm = (taskCount: number, limits: Record<string, number> = {}): Promise<Swarm> => startNumberedSwarm("lane", TENANT, taskCount, limits);

/** The real model client against the mock, each call `delayMs` late, seen (and maybe broken) by `wrap`. */
function mockModel(
  delayMs = 0,
  wrap: (request: ModelRequest) => void = () => {},
  afterServed: (request: ModelRequest) => void = () => {},
): ModelClient & { requests: ModelRequest[] } {
  const real = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY });
  const requests: ModelRequest[] = [];
  return {
    requests,
    async complete(request) {
      requests.push(request);
      wrap(request);
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      const result = await real.complete(request);
      afterServed(request);
      return result;
    },
  };
}

/** The task a request is for (its prompt is `Summarize item <task>.`). */
const taskOf = (request: ModelRequest): string => promptOf(request).replace(/^Summarize item (.*)\.$/, "$1");

/**
 * The real rooms, through a wrapper that counts pulls and may break one: `failBefore` (the room
 * never sees the pull) or `failAfter` (the room answered, the answer is lost; its grants are kept in `lostGrants`).
 */
function wrappedRooms(options: { failBefore?: (n: number, request: PullRequest) => boolean; failAfter?: (n: number, answer: PullResponse) => boolean } = {}) {
  const real = toSwarmRooms(env.SWARM_ROOM);
  const seen = {
    pulls: 0,
    failed: 0,
    granted: 0,
    lostGrants: [] as string[],
    startNotes: 0,
    standby: 0,
    promoted: 0,
    released: 0,
    ran: 0,
    requests: [] as PullRequest[],
  };
  const rooms: SwarmRooms = (swarmId) => {
    const stub = real(swarmId);
    const room: SwarmRoomRpc = {
      hedgeCall: (start) => stub.hedgeCall(start),
      async pull(request) {
        seen.pulls += 1;
        seen.requests.push(structuredClone(request));
        const n = seen.pulls;
        if (options.failBefore?.(n, request)) {
          seen.failed += 1;
          throw new Error("Network connection lost.");
        }
        const answer = await stub.pull(request);
        if (options.failAfter?.(n, answer)) {
          seen.failed += 1;
          seen.lostGrants.push(...answer.granted.map((t) => t.taskId));
          throw new Error("Durable Object reset because its code was updated");
        }
        seen.granted += answer.granted.length;
        seen.standby += answer.granted.filter((task) => task.standby === true).length;
        seen.ran += answer.run?.length ?? 0;
        seen.promoted += request.promoted?.length ?? 0;
        seen.released += request.released?.length ?? 0;
        return answer;
      },
      recordCalls: (reports) => stub.recordCalls(reports),
      startCalls: (starts) => {
        seen.startNotes += 1;
        return stub.startCalls(starts);
      },
      scratchpad: (request) => stub.scratchpad(request),
      recordDeadTicket: (ticket) => stub.recordDeadTicket(ticket),
    };
    return room;
  };
  return { rooms, seen };
}

async function deliver(messages: MessageBatchMessage<unknown>[], deps: Partial<ConsumeTasksDeps> & Pick<ConsumeTasksDeps, "gateway">): Promise<QueueResult> {
  const batch = createMessageBatch("edgeswarm-tasks", messages);
  const ctx = createExecutionContext();
  await consumeTasks(batch, { ...LANE_DEFAULTS, rooms: toSwarmRooms(env.SWARM_ROOM), ...deps });
  return getQueueResult(batch, ctx);
}

/** Every task ended once and succeeded, and the ledger has one row per upstream call, each call id once. */
async function expectEveryTaskOnce(swarm: Swarm, before: { calls: number; total_tokens: number }): Promise<Awaited<ReturnType<typeof ledgerRows>>> {
  const results = await swarm.results();
  expect(results.map((r) => r.state)).toEqual(swarm.taskIds.map(() => "succeeded"));
  const after = await mockStats();
  const upstream = after.calls - before.calls;
  const rows = await ledgerRows(swarm.swarmId, upstream);
  expect(rows).toHaveLength(upstream);
  expect(new Set(rows.map((r) => r.call_id)).size).toBe(rows.length);
  expect(rows.reduce((sum, row) => sum + (row.total_tokens ?? 0), 0)).toBe(after.total_tokens - before.total_tokens);
  // A task's succeeded call is never made twice.
  const okTasks = rows.filter((r) => r.status === "ok").map((r) => r.task_id);
  expect(okTasks.sort()).toEqual([...swarm.taskIds].sort());
  return rows;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a ticket delivered more than once (real SwarmRoom)", () => {
  it("the same ticket twice in one batch, and again in a second batch while the first lane runs: every task runs once, one ledger row per call", async () => {
    const swarm = await startSwarm(24);
    const before = await mockStats();
    const [ticket] = tickets(swarm.swarmId, 1);
    if (ticket === undefined) throw new Error("no ticket");
    const duplicate = { ...ticket, id: `${ticket.id}-dup`, attempts: 2 };
    const later: { batch?: Promise<QueueResult> } = {};
    const model = mockModel(20, () => {
      // Once the first lane is busy, the queue delivers the ticket again, in a batch of its own.
      if (model.requests.length === 5)
        later.batch = deliver([{ ...ticket, id: `${ticket.id}-late`, attempts: 3 }], { gateway: directGateway(model), concurrency: 4 });
    });

    const first = await deliver([ticket, duplicate], { gateway: directGateway(model), concurrency: 4 });
    if (later.batch === undefined) throw new Error("the second batch never started");
    const late = await later.batch;

    expect(first.explicitAcks.sort()).toEqual([ticket.id, duplicate.id].sort());
    expect(late.explicitAcks).toEqual([`${ticket.id}-late`]);
    expect(model.requests).toHaveLength(24);
    const rows = await expectEveryTaskOnce(swarm, before);
    expect(rows.map((r) => r.call_id)).toEqual(swarm.taskIds.map((t) => `${swarm.swarmId}:${t}:1:1`).sort());
    expect((await swarm.status()).state).toBe("completed");
  });
});

describe("a consumer that dies mid-pull (real SwarmRoom)", () => {
  it("the room stops answering after some grants: nothing is lost, the leased tasks come back after their lease and end once; ledger = upstream calls", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    // Leases of 4 s (timeout_s + LEASE_GRACE_S 1): the dying lane's pull retries take about 2 s, and
    // its tasks must still be leased when it gives up (at 1 s a fresh clone's run found them ended).
    const swarm = await startSwarm(12, { timeout_s: 3 });
    const before = await mockStats();
    // The invocation's link to the room dies after its first two pulls (the grants of 3 and 3 more).
    const dying = wrappedRooms({ failBefore: (n) => n > 2 });
    const first = tickets(swarm.swarmId, 1);

    const r1 = await deliver(first, { rooms: dying.rooms, gateway: directGateway(mockModel()), concurrency: 3, headerSlots: 0 });

    // It reached the room, so its ticket is acked; what it could not record is left to the leases.
    expect(r1.explicitAcks).toEqual(messageIds(first));
    expect(dying.seen.granted).toBeGreaterThanOrEqual(3);
    expect(dying.seen.granted).toBeLessThan(12);
    const afterDeath = await swarm.status();
    expect(afterDeath.counts.running).toBeGreaterThan(0);

    // The leases end; a fresh ticket runs what is left.
    expect(await waitFor(async () => (await swarm.status()).counts.running === 0, 20_000)).toBe(true);
    const r2 = await deliver(tickets(swarm.swarmId, 1), { gateway: directGateway(mockModel()), concurrency: 3 });
    expect(r2.explicitAcks).toHaveLength(1);

    const rows = await ledgerRows(swarm.swarmId, (await mockStats()).calls - before.calls);
    const results = await swarm.results();
    expect(results.map((r) => r.state)).toEqual(swarm.taskIds.map(() => "succeeded"));
    const after = await mockStats();
    expect(rows).toHaveLength(after.calls - before.calls);
    expect(new Set(rows.map((r) => r.call_id)).size).toBe(rows.length);
    // A task ran again only when its earlier outcome never reached the room, and no task's answer
    // was paid twice: one whose answer reached the room with its call (the journal) was finished
    // from it, and called the model no more.
    for (const result of results) {
      const own = rows.filter((r) => r.task_id === result.task_id);
      expect(own.length).toBeLessThanOrEqual(result.attempts);
      expect(own.filter((r) => r.status === "ok")).toHaveLength(1);
    }
    expect((await swarm.status()).state).toBe("completed");
  }, 60_000);

  it("its runs throw after some grants (the upstream served them): the lane goes on, what threw comes back after its lease and ends once, its lost calls billed", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    // Leases of 4 s: the two lost tasks must still be leased when the lane ends.
    const swarm = await startSwarm(8, { timeout_s: 3 });
    const before = await mockStats();
    const broken = new Set(["task-003", "task-006"]);
    const model = mockModel(0, undefined, (request) => {
      if (broken.has(taskOf(request))) throw new Error("isolate ran out of memory");
    });
    const first = tickets(swarm.swarmId, 1);

    const r1 = await deliver(first, { gateway: directGateway(model), concurrency: 2 });

    expect(r1.explicitAcks).toEqual(messageIds(first));
    expect((await swarm.status()).counts).toMatchObject({ succeeded: 6, running: 2 });
    expect(await waitFor(async () => (await swarm.status()).counts.running === 0, 20_000)).toBe(true);
    broken.clear();
    await deliver(tickets(swarm.swarmId, 1), { gateway: directGateway(model), concurrency: 2 });

    // Upstream calls = ledger rows: the two lost calls are there as `unknown`, their retries as new call ids.
    const results = await swarm.results();
    expect(results.map((r) => r.state)).toEqual(swarm.taskIds.map(() => "succeeded"));
    const upstream = (await mockStats()).calls - before.calls;
    const rows = await ledgerRows(swarm.swarmId, upstream);
    expect(rows).toHaveLength(upstream);
    expect(rows.filter((r) => r.status === "unknown").map((r) => [r.task_id, r.attempt])).toEqual([
      ["task-003", 1],
      ["task-006", 1],
    ]);
    expect(
      rows
        .filter((r) => r.attempt === 2)
        .map((r) => r.task_id)
        .sort(),
    ).toEqual(["task-003", "task-006"]);
    expect((await swarm.results()).filter((r) => r.attempts === 2).map((r) => r.task_id)).toEqual(["task-003", "task-006"]);
  }, 60_000);
});

describe("pulls that fail", () => {
  it("real room: pulls the room never saw are retried with the same reports; every outcome recorded once, nothing run twice", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const swarm = await startSwarm(10);
    const before = await mockStats();
    // Every third pull fails once (never twice in a row, so no lane gives up).
    const flaky = wrappedRooms({ failBefore: (n) => n % 3 === 2 });

    const result = await deliver(tickets(swarm.swarmId, 2), { rooms: flaky.rooms, gateway: directGateway(mockModel()), concurrency: 3 });

    expect(flaky.seen.failed).toBeGreaterThan(0);
    expect(result.explicitAcks).toHaveLength(2);
    const rows = await expectEveryTaskOnce(swarm, before);
    expect(rows.every((r) => r.attempt === 1)).toBe(true);
  });

  it("real room: a pull whose answer is lost is sent again under its number; the room gives the lost answer's tasks again, so none waits for its lease, and each runs once", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const swarm = await startSwarm(6, { timeout_s: 1 });
    const before = await mockStats();
    // The room answers the second pull (recording its reports and leasing what it grants), but the answer never arrives.
    const lossy = wrappedRooms({ failAfter: (n, answer) => n === 2 && answer.granted.length > 0 });
    const model = mockModel();

    const r1 = await deliver(tickets(swarm.swarmId, 1), {
      rooms: lossy.rooms,
      gateway: directGateway(model),
      concurrency: 2,
      headerSlots: 0,
      coalesce: { ms: 0, outcomes: 1 },
    });
    expect(r1.explicitAcks).toHaveLength(1);
    expect(lossy.seen.lostGrants.length).toBeGreaterThan(0);
    // The lane ran what the lost answer granted, when its repeat gave those tasks again.
    expect(
      model.requests
        .map(taskOf)
        .filter((t) => lossy.seen.lostGrants.includes(t))
        .sort(),
    ).toEqual([...lossy.seen.lostGrants].sort());
    expect((await swarm.status()).state).toBe("completed");

    const rows = await expectEveryTaskOnce(swarm, before);
    // Each task called the upstream exactly once, all in their first attempt: no lease had to run out.
    expect(rows).toHaveLength(6);
    expect(rows.every((r) => r.attempt === 1)).toBe(true);
  }, 60_000);

  it("real room: a lane none of whose 4 tries reaches the room leaves its ticket to be retried, and the swarm untouched", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const swarm = await startSwarm(2);
    const down = wrappedRooms({ failBefore: () => true });
    const model = mockModel();
    const messages = tickets(swarm.swarmId, 1);

    const result = await deliver(messages, { rooms: down.rooms, gateway: directGateway(model), sleep: async () => {} });

    expect(down.seen.pulls).toBe(4);
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(messageIds(messages));
    expect(model.requests).toEqual([]);
    expect((await swarm.status()).counts).toMatchObject({ queued: 2, running: 0 });
  });

  it("fake room: the outcomes of a pull that failed 4 times go with the lane's next pull; none is lost or run again", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const time = fakeClock();
    const room = new FakeRoom("sw_a", { tasks: ["fast", "slow"], clock: time.now });
    // Pulls 2-5 (the 4 tries of the pull with `fast`'s outcome) fail; the room is back by the time `slow` ends.
    room.failPull = (n) => n >= 2 && n <= 5;
    const model = fakeModel(0, okResult);
    const slowModel = {
      complete: async (request: ModelRequest) => {
        if (promptOf(request) === "prompt of slow") await new Promise((resolve) => setTimeout(resolve, 50));
        return model.client.complete(request);
      },
    };

    const result = await run([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 2,
      rooms: roomsOf(room),
      gateway: directGateway(slowModel),
      now: time.now,
      sleep: time.sleep,
    });

    expect(room.states()).toEqual({ fast: ["succeeded", 1], slow: ["succeeded", 1] });
    expect(room.grants.map((g) => g.taskId).sort()).toEqual(["fast", "slow"]);
    expect(result.explicitAcks).toEqual(["m1"]);
  });
});

describe("heartbeats", () => {
  it("a call longer than the lease: the lane renews the lease while it runs, so the task is never handed out again", async () => {
    // Leases of 300 ms, a call of 1.2 s: without heartbeats the lease would lapse four times over.
    const room = new FakeRoom("sw_hb", { tasks: ["slow"], timeoutS: 5, leaseMs: 300 });
    const model = fakeModel(0, okResult);
    const slowModel = {
      complete: async (request: ModelRequest) => {
        await new Promise((resolve) => setTimeout(resolve, 1_200));
        return model.client.complete(request);
      },
    };

    const result = await run([ticketMessage("m1", "sw_hb")], { ...BASE, rooms: roomsOf(room), gateway: directGateway(slowModel) });

    expect(result.explicitAcks).toEqual(["m1"]);
    expect(room.states()).toEqual({ slow: ["succeeded", 1] });
    expect(model.requests).toHaveLength(1);
    const beats = room.pulls.filter((p) => (p.renew ?? []).some((r) => r.taskId === "slow" && r.attempt === 1));
    // About one heartbeat per half lease (150 ms) over 1.2 s; never one per event-loop turn.
    expect(beats.length).toBeGreaterThanOrEqual(3);
    expect(beats.length).toBeLessThan(20);
  });
});

describe("cancel while a lane pulls (real SwarmRoom)", () => {
  it("the lane stops taking tasks, what it runs is recorded, the ticket is acked and the swarm ends cancelled", async () => {
    const swarm = await startSwarm(30);
    const before = await mockStats();
    let cancelled = false;
    const model = mockModel(30, () => {
      if (model.requests.length === 6 && !cancelled) {
        cancelled = true;
        void swarm.stub.cancel(TENANT);
      }
    });
    const { rooms, seen } = wrappedRooms();
    const messages = tickets(swarm.swarmId, 1);

    const result = await deliver(messages, { rooms, gateway: directGateway(model), concurrency: 4, headerSlots: 0 });

    expect(result.explicitAcks).toEqual(messageIds(messages));
    const status = await swarm.status();
    expect(status.state).toBe("cancelled");
    expect(status.counts.running).toBe(0);
    // Every task the lane started was recorded: the ones it ran succeeded, nothing else ran. (The
    // standby tasks it held went back unstarted with the cancel, and ended cancelled.)
    const started = seen.granted - seen.released;
    expect(status.counts.succeeded).toBe(started);
    expect(started).toBeLessThan(30);
    expect(status.counts.succeeded + status.counts.cancelled).toBe(30);
    expect(model.requests).toHaveLength(started);
    const after = await mockStats();
    expect(await ledgerRows(swarm.swarmId, after.calls - before.calls)).toHaveLength(after.calls - before.calls);
  });
});

describe("standby tasks (real SwarmRoom)", () => {
  /** The mock behind a counter of the calls in flight at once. */
  function countedModel(delayMs: number, onRequest: (count: number) => void = () => {}) {
    const counter = { now: 0, max: 0 };
    const inner = mockModel(delayMs, () => {
      counter.now += 1;
      counter.max = Math.max(counter.max, counter.now);
      onRequest(inner.requests.length);
    });
    const model: ModelClient & { requests: ModelRequest[] } = {
      requests: inner.requests,
      async complete(request) {
        try {
          return await inner.complete(request);
        } finally {
          counter.now -= 1;
        }
      },
    };
    return { model, counter };
  }

  it("with the window full, a lane starts standby tasks in the places of ended ones: never more calls at once than the window, every task once", async () => {
    const swarm = await startSwarm(60, { concurrency: 10 });
    const before = await mockStats();
    const { rooms, seen } = wrappedRooms();
    const { model, counter } = countedModel(20);

    await deliver(tickets(swarm.swarmId, 1), { rooms, gateway: directGateway(model), concurrency: 20, headerSlots: 0 });

    await expectEveryTaskOnce(swarm, before);
    expect(counter.max).toBeLessThanOrEqual(10);
    expect(seen.standby).toBeGreaterThan(0);
    // Most slots were filled by a standby task the moment they freed, not by a pull's answer.
    expect(seen.promoted).toBeGreaterThan(25);
    expect(model.requests).toHaveLength(60);
  }, 30_000);

  it("a lane that finds the window full, with nothing of its own running, is granted no standby tasks: no grant-and-hand-back loop", async () => {
    const swarm = await startSwarm(24, { concurrency: 4 });
    const before = await mockStats();
    const { rooms, seen } = wrappedRooms();

    // Two lanes side by side: the first to pull fills the window; the other has nothing to run
    // until a slot frees. Were it granted standby tasks, it could start none, would hand them
    // back, and ask again, pull after pull, while the window stayed full.
    await deliver(tickets(swarm.swarmId, 2), { rooms, gateway: directGateway(mockModel(40)), concurrency: 4, headerSlots: 0 });

    await expectEveryTaskOnce(swarm, before);
    expect(seen.released).toBe(0);
    // 24 tasks in waves of 4: a few pulls a wave per lane, not one every RPC round trip.
    expect(seen.pulls).toBeLessThan(60);
  }, 30_000);

  it("a lane that stops hands its standby tasks back unstarted: nothing unstarted is billed, and they run once on the next ticket", async () => {
    const swarm = await startSwarm(12, { concurrency: 2 });
    const before = await mockStats();
    const { rooms, seen } = wrappedRooms();

    // The lane stops pulling 20 ms in, before its first tasks end: its standby tasks never start.
    await deliver(tickets(swarm.swarmId, 1), { rooms, gateway: directGateway(mockModel(60)), concurrency: 4, headerSlots: 0, pullForMs: 20 });

    // A wave of its concurrency of 4, past the window's 2.
    expect(seen.standby).toBe(4);
    expect(seen.released).toBe(4);
    expect(seen.promoted).toBe(0);
    const counts = (await swarm.status()).counts;
    expect(counts).toMatchObject({ succeeded: 2, running: 0, queued: 10 });
    await deliver(tickets(swarm.swarmId, 1), { gateway: directGateway(mockModel()), concurrency: 4, headerSlots: 0 });
    const rows = await expectEveryTaskOnce(swarm, before);
    // Only calls that were made are on the bill: none of an unstarted standby task.
    expect(rows.every((row) => row.status === "ok")).toBe(true);
  }, 30_000);

  it("cancel while a lane holds standby tasks: they end cancelled without a call, and the swarm ends", async () => {
    const swarm = await startSwarm(40, { concurrency: 4 });
    const before = await mockStats();
    let cancelled = false;
    const { model } = countedModel(30, (count) => {
      if (count === 6 && !cancelled) {
        cancelled = true;
        void swarm.stub.cancel(TENANT);
      }
    });
    const { rooms, seen } = wrappedRooms();

    const result = await deliver(tickets(swarm.swarmId, 1), { rooms, gateway: directGateway(model), concurrency: 8, headerSlots: 0 });

    expect(result.explicitAcks).toHaveLength(1);
    expect(seen.standby).toBeGreaterThan(0);
    const status = await swarm.status();
    expect(status.state).toBe("cancelled");
    expect(status.counts.running).toBe(0);
    expect(status.counts.queued).toBe(0);
    // Every call made is a task that succeeded; no standby task called once it was cancelled.
    expect(model.requests).toHaveLength(status.counts.succeeded);
    expect(status.counts.succeeded + status.counts.cancelled).toBe(40);
    const after = await mockStats();
    expect(await ledgerRows(swarm.swarmId, after.calls - before.calls)).toHaveLength(after.calls - before.calls);
  }, 30_000);
});

describe("standby tasks when the window moves (fake room)", () => {
  /** A fake model that records how many calls were in flight as each started. */
  function observedModel() {
    const inFlightAtStart: number[] = [];
    const model = fakeModel(20);
    const client: ModelClient = {
      complete(request) {
        inFlightAtStart.push(model.inFlight());
        return model.client.complete(request);
      },
    };
    return { model, client, inFlightAtStart };
  }

  it("a window that shrinks: once an answer says so, no standby task takes an ended one's slot until the window holds again", async () => {
    const room = new FakeRoom("sw_a", { tasks: Array.from({ length: 10 }, (_, i) => `t${i + 1}`), window: 3 });
    // Right after the first grant (3 in the window, 6 standby: a wave of the lane's concurrency), the
    // window shrinks to 1, as on 429s.
    room.afterPull = () => {
      if (room.pulls.length === 1) room.window = 1;
    };
    const { model, client, inFlightAtStart } = observedModel();

    const { explicitAcks } = await run([ticketMessage("m1", "sw_a")], { ...BASE, concurrency: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(explicitAcks).toEqual(["m1"]);
    expect(room.count("succeeded")).toBe(10);
    expect(model.requests).toHaveLength(10);
    expect(room.answers[0]?.granted.filter((task) => task.standby === true)).toHaveLength(6);
    expect(room.answers.some((answer) => answer.transfer === false)).toBe(true);
    // The first ended task's slot went to a standby task under the first answer, which did not know
    // of the shrink yet; once the room answered `transfer: false`, ended slots stayed empty until
    // one call was left, and every later call started with no other in flight.
    expect(room.pulls[1]?.promoted).toHaveLength(1);
    expect(inFlightAtStart.slice(4).every((n) => n === 0)).toBe(true);
    expect(room.grants).toHaveLength(10);
  });

  it.each<[string, ModelCallResult | null, boolean]>([
    [
      "a failure that may stop the swarm (bad_request, never retried)",
      { ok: false, error: { class: "bad_request", retryable: false, retryAfterMs: null, message: "400 bad schema" }, usage: null, latencyMs: 3, startedAt: 0 },
      false,
    ],
    ["a success", null, true],
  ])("after %s, a standby task takes the slot at once: %s", async (_label, result, promotes) => {
    const room = new FakeRoom("sw_a", { tasks: Array.from({ length: 10 }, (_, i) => `t${i + 1}`), window: 3 });
    const model = fakeModel(20, (request) => result ?? okResult(request));

    await run([ticketMessage("m1", "sw_a")], { ...BASE, concurrency: 6, rooms: roomsOf(room), gateway: directGateway(model.client) });

    expect(room.count(result === null ? "succeeded" : "failed")).toBe(10);
    expect(room.answers[0]?.granted.filter((task) => task.standby === true).length).toBeGreaterThan(0);
    // Fail fast: with a run of such failures going, the room's answer to the pull that reports one
    // decides (it runs the held tasks in the window's room, or stops the swarm and they go back).
    expect(room.pulls.some((pull) => (pull.promoted ?? []).length > 0)).toBe(promotes);
    if (!promotes) expect(room.answers.flatMap((answer) => answer.run ?? []).length).toBeGreaterThan(0);
    expect(room.grants).toHaveLength(10);
  });

  it("a lane told to retire hands its standby tasks back at once, before its running tasks end, and ends with them", async () => {
    const room = new FakeRoom("sw_a", { tasks: Array.from({ length: 10 }, (_, i) => `t${i + 1}`), window: 3 });
    // The first answer grants 3 in the window and 6 standby, and says other lanes carry the swarm.
    room.afterPull = (_request, answer) => {
      if (room.pulls.length === 1) answer.retire = true;
    };
    const { model, client } = observedModel();

    const { explicitAcks } = await run([ticketMessage("m1", "sw_a")], { ...BASE, concurrency: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(explicitAcks).toEqual(["m1"]);
    const standby = room.answers[0]?.granted.filter((task) => task.standby === true).map((task) => task.taskId) ?? [];
    expect(standby).toHaveLength(6);
    // The next pull goes at once: it hands the standby tasks back and reports nothing yet.
    expect(room.pulls[1]?.released?.map((task) => task.taskId).sort()).toEqual([...standby].sort());
    expect(room.pulls[1]?.reports).toEqual([]);
    expect(room.pulls.slice(1).every((pull) => pull.want === 0 && (pull.standby ?? 0) === 0)).toBe(true);
    // Only its 3 window tasks ran; the rest wait for the lanes that carry the swarm.
    expect(model.requests).toHaveLength(3);
    expect(room.count("succeeded")).toBe(3);
    expect(room.count("pending")).toBe(7);
  });

  it("a window that grows runs the lane's held standby tasks at once (`run`), without handing them out again", async () => {
    const room = new FakeRoom("sw_a", { tasks: Array.from({ length: 10 }, (_, i) => `t${i + 1}`), window: 3 });
    room.afterPull = () => {
      if (room.pulls.length === 1) room.window = 6;
    };
    const { model, client } = observedModel();

    await run([ticketMessage("m1", "sw_a")], { ...BASE, concurrency: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(10);
    expect(model.requests).toHaveLength(10);
    const ran = room.answers.flatMap((answer) => answer.run ?? []).map((task) => task.taskId);
    expect(ran.length).toBeGreaterThan(0);
    // Each ran under the attempt it was granted as standby: no task was handed out twice.
    expect(room.grants).toHaveLength(10);
    expect(model.maxInFlight()).toBeLessThanOrEqual(6);
  });
});

describe("prompt-cache warm-up (real SwarmRoom)", () => {
  it("the lane says `warmed` when its warm-up call's headers arrive: the held tasks start before that call's answer, the other lane's waiting pull among them", async () => {
    const swarmId = `sw_warm${Date.now().toString(36)}`;
    const taskIds = Array.from({ length: 6 }, (_, i) => `task-${String(i + 1).padStart(3, "0")}`);
    // About 1,500 tokens of system prompt shared by every task: the room starts one task first.
    const swarm = await startRoomSwarm({
      swarmId,
      tenant: TENANT,
      spec: { name: "warm-up", model: "mock-1", system: "You are a careful reviewer. ".repeat(220), limits: LimitsSchema.parse({ concurrency: 6 }) },
      tasks: taskIds.map((id) => ({ id, prompt: `Summarize item ${id}.` })),
      createdAt: Date.now(),
      origin: { kind: "api" },
    });
    const events: string[] = [];
    const sent = (): number => events.filter((event) => event.startsWith("sent")).length;
    let othersSent: () => void = () => {};
    const fourSent = new Promise<void>((resolve) => {
      othersSent = resolve;
    });
    const client: ModelClient = {
      async complete(request) {
        events.push(`sent ${taskOf(request)}`);
        // The headers are here at once (the model client frees the header slot then); the first
        // call's answer waits until three more calls are out, or 3 s (the hold lasts 5 s).
        request.headerSlot?.release();
        if (sent() === 1) {
          await Promise.race([fourSent, new Promise((resolve) => setTimeout(resolve, 3_000))]);
          events.push(`answer ${taskOf(request)}`);
        } else if (sent() === 4) othersSent();
        return okResult(request);
      },
    };
    const { rooms, seen } = wrappedRooms();

    // Two lanes of 2 slots: one takes the warm-up task, the other's first pull waits in the room.
    const result = await run([ticketMessage("m1", swarmId), ticketMessage("m2", swarmId)], { ...BASE, concurrency: 2, rooms, gateway: directGateway(client) });

    expect(result.explicitAcks.sort()).toEqual(["m1", "m2"]);
    expect(events.indexOf("answer task-001")).toBeGreaterThan(3);
    expect(events.slice(0, 4).sort()).toEqual(["sent task-001", "sent task-002", "sent task-003", "sent task-004"]);
    const warmed = seen.requests.filter((request) => request.warmed === true);
    expect(warmed).toHaveLength(1);
    // Both lanes' first pulls: the warm-up task to one, then two tasks to the other at the release.
    const firsts = seen.requests.filter((request) => request.seq === 1);
    expect(firsts).toHaveLength(2);
    expect(new Set(firsts.map((request) => request.ticket))).toEqual(new Set(["m1", "m2"]));
    expect((await swarm.results()).map((r) => r.state)).toEqual(taskIds.map(() => "succeeded"));
  });
});

describe("the header gate and the lease (real SwarmRoom)", () => {
  it("a call that could no longer end inside its task's lease is handed back without a request (a deferral), and runs as a later attempt: each task calls the upstream once", async () => {
    // timeout_s 1 + LEASE_GRACE_S 1: each lease ends 2 s after its grant, so a call must start within 1 s of it.
    const swarm = await startSwarm(4, { timeout_s: 1 });
    const before = await mockStats();
    // One header slot and 700 ms to headers: the 3rd and 4th calls could only start after 1 s.
    const requests = { count: 0 };
    const slowHeaders: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set("x-mock-ttfb-ms", "700");
      requests.count += 1;
      return fetch(input, { ...init, headers });
    };
    const gated = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: slowHeaders });

    // A lane ends when nothing is left for it soon; a fresh ticket takes what waits (as the room would send).
    for (let delivery = 0; delivery < 6 && (await swarm.status()).state !== "completed"; delivery += 1) {
      await deliver(tickets(swarm.swarmId, 1), { gateway: directGateway(gated), concurrency: 4, headerSlots: 1 });
    }

    expect((await swarm.status()).state).toBe("completed");
    // A deferred call sent nothing: the upstream saw one request per task.
    expect(requests.count).toBe(4);
    const rows = await expectEveryTaskOnce(swarm, before);
    const attempts = new Map(rows.map((r) => [r.task_id, Number(r.call_id.split(":")[2])]));
    expect([attempts.get("task-001"), attempts.get("task-002")]).toEqual([1, 1]);
    // The ones that could not start in time ran under a later attempt number (their deferred ones made no call).
    expect(attempts.get("task-003")).toBeGreaterThan(1);
    expect(attempts.get("task-004")).toBeGreaterThan(1);
  }, 30_000);
});

describe("coalescing (real SwarmRoom)", () => {
  it("with 100 quick tasks at window 20, a lane makes at most one pull per 4 tasks", async () => {
    const swarm = await startSwarm(100, { concurrency: 20 });
    const before = await mockStats();
    const { rooms, seen } = wrappedRooms();

    const result = await deliver(tickets(swarm.swarmId, 1), { rooms, gateway: directGateway(mockModel(5)), concurrency: 20, headerSlots: 0 });

    expect(result.explicitAcks).toHaveLength(1);
    await expectEveryTaskOnce(swarm, before);
    expect(seen.granted).toBe(100);
    expect(seen.pulls).toBeLessThanOrEqual(25);
  }, 30_000);
});

describe("the grant notes first calls (real SwarmRoom)", () => {
  it("single-call tasks started at once need no startCalls RPC; every call is still on the bill", async () => {
    const swarm = await startSwarm(20, { concurrency: 10 });
    const before = await mockStats();
    const { rooms, seen } = wrappedRooms();
    await deliver(tickets(swarm.swarmId, 1), { rooms, gateway: directGateway(mockModel(5)), concurrency: 10, headerSlots: 0 });
    await expectEveryTaskOnce(swarm, before);
    expect(seen.startNotes).toBe(0);
  }, 30_000);
});

describe("a lane lists the calls it started (real SwarmRoom)", () => {
  it("whole lists at most every STARTED_LIST_MS; the pulls between list the reported attempts' calls only, and every call is on the bill once", async () => {
    const swarm = await startSwarm(60, { concurrency: 10 });
    const before = await mockStats();
    const { rooms, seen } = wrappedRooms();
    await deliver(tickets(swarm.swarmId, 1), { rooms, gateway: directGateway(mockModel(5)), concurrency: 10, headerSlots: 0 });
    await expectEveryTaskOnce(swarm, before);
    const whole = seen.requests.filter((request) => request.startedPartial !== true);
    const partial = seen.requests.filter((request) => request.startedPartial === true);
    expect(partial.length).toBeGreaterThan(0);
    // The first pull's list is whole; later whole ones come STARTED_LIST_MS apart.
    expect(seen.requests[0]?.startedPartial).toBeUndefined();
    for (const [i, request] of whole.entries()) {
      const previous = whole[i - 1];
      if (previous !== undefined) expect((request.sentAt ?? 0) - (previous.sentAt ?? 0)).toBeGreaterThanOrEqual(STARTED_LIST_MS);
    }
    for (const request of partial) {
      const reported = new Set(request.reports.map((report) => `${report.taskId}:${report.attempt}`));
      for (const start of request.started ?? []) expect(reported.has(`${start.taskId}:${start.attempt}`)).toBe(true);
    }
  }, 30_000);
});

describe("a lane stops before its invocation's limits", () => {
  it("pullUntil passes after the first pull: the lane finishes what it started, sends final, and leaves the rest pending", async () => {
    const time = fakeClock();
    const room = new FakeRoom("sw_a", { tasks: Array.from({ length: 10 }, (_, i) => `t${i + 1}`), clock: time.now });
    room.afterPull = () => {
      // The first answer arrives just past the lane's pull-for time.
      if (room.pulls.length === 1) time.clock.t += BASE.pullForMs;
    };
    const model = fakeModel();

    const { explicitAcks } = await run([ticketMessage("m1", "sw_a")], {
      ...BASE,
      concurrency: 3,
      rooms: roomsOf(room),
      gateway: directGateway(model.client),
      now: time.now,
      sleep: time.sleep,
    });

    expect(model.requests).toHaveLength(3);
    expect(room.count("succeeded")).toBe(3);
    expect(room.count("pending")).toBe(7);
    expect(room.pulls.slice(1).every((p) => p.want === 0)).toBe(true);
    expect(room.pulls.at(-1)?.final).toBe(true);
    expect(
      room
        .reports()
        .map((r) => r.taskId)
        .sort(),
    ).toEqual(["t1", "t2", "t3"]);
    expect(explicitAcks).toEqual(["m1"]);
  });

  it("real room: an allowance of 4 tasks: the lane runs 4, sends final, and the rest waits for another ticket", async () => {
    const swarm = await startSwarm(10);
    const before = await mockStats();
    const { rooms, seen } = wrappedRooms();
    const finals: PullRequest[] = [];
    const watching: SwarmRooms = (swarmId) => {
      const room = rooms(swarmId);
      return {
        ...room,
        pull(request) {
          if (request.final) finals.push(request);
          return room.pull(request);
        },
      };
    };

    const r1 = await deliver(tickets(swarm.swarmId, 1), { rooms: watching, gateway: directGateway(mockModel()), maxTasks: 4 });

    expect(r1.explicitAcks).toHaveLength(1);
    expect(seen.granted).toBe(4);
    expect(finals).toHaveLength(1);
    expect((await swarm.status()).counts).toMatchObject({ succeeded: 4, queued: 6, running: 0 });
    await deliver(tickets(swarm.swarmId, 1), { gateway: directGateway(mockModel()) });
    await expectEveryTaskOnce(swarm, before);
  });

  it("the allowance is the invocation's: once its lanes have started that many tasks, none asks for more", async () => {
    const room = new FakeRoom("sw_a", { tasks: Array.from({ length: 10 }, (_, i) => `t${i + 1}`) });
    const model = fakeModel(5);

    const { explicitAcks } = await run([ticketMessage("m1", "sw_a"), ticketMessage("m2", "sw_a")], {
      ...BASE,
      concurrency: 2,
      maxTasks: 3,
      rooms: roomsOf(room),
      gateway: directGateway(model.client),
    });

    // Both lanes' first pulls go out together, each asking for min(concurrency, allowance) = 2:
    // the allowance is a soft bound, overshot by at most what concurrent pulls are granted.
    expect(room.pulls.slice(0, 2).map((p) => p.want)).toEqual([2, 2]);
    expect(room.grants).toHaveLength(4);
    expect(room.pulls.slice(2).every((p) => p.want === 0)).toBe(true);
    expect(model.requests).toHaveLength(4);
    expect(room.count("pending")).toBe(6);
    expect(explicitAcks.sort()).toEqual(["m1", "m2"]);
  });
});

describe("how long outcomes wait for company", () => {
  const lane = (slots: number, running: number, hedging = false, settled = true): LaneShape => ({
    slots,
    concurrency: 128,
    running,
    outcomes: 32,
    hedging,
    settled,
  });
  it.each<[string, number, number | null, LaneShape | undefined, number]>([
    ["no timing yet: the setting", 5, null, undefined, 5],
    ["200 ms calls: 10% is 20 ms", 5, 200, undefined, 20],
    ["fast calls: the setting", 5, 40, undefined, 5],
    ["480 ms calls: 48 ms", 5, 480, undefined, 48],
    ["10 s calls: at most 100 ms", 5, 10_000, undefined, 100],
    ["a setting of 0 (tests): 0", 0, 10_000, undefined, 0],
    ["a header-bound lane (6 slots, 6 running), 200 ms calls: two slots' worth, 400 ms", 5, 200, lane(6, 6), 400],
    ["a header-bound lane, 666 ms calls (lognormal 300/1500 with headers at the end): at most 1 s", 5, 666, lane(6, 6), 1_000],
    ["the same lane while the swarm hedges: at most 400 ms", 5, 666, lane(6, 6, true), 400],
    ["a header-bound lane, 3 s calls (a reasoning model's slow first token): one call, 3 s", 5, 3_000, lane(6, 6), 3_000],
    ["a header-bound lane, 20 s calls: at most 5 s (LONG_CALL_COALESCE_MAX_MS)", 5, 20_000, lane(6, 6), 5_000],
    ["a header-bound lane of 3 s calls with a task to retry among its outcomes: at most 1 s", 5, 3_000, lane(6, 6, false, false), 1_000],
    ["a header-bound lane of 3 s calls while the swarm hedges: at most 400 ms", 5, 3_000, lane(6, 6, true), 400],
    ["a header-bound lane of 1.5 s calls running 3 of its 6: one call, 1.5 s", 5, 1_500, lane(6, 3), 1_500],
    ["a hedging header-bound lane of 200 ms calls: two slots' worth, 400 ms", 5, 200, lane(6, 6, true), 400],
    ["a header-bound lane running 3 of its 6, 300 ms calls: two carried tasks' worth, 600 ms", 5, 300, lane(6, 3), 600],
    ["a wide lane the room spreads thin (6 of 128 slots running), 480 ms calls: two carried tasks' worth, 960 ms", 5, 480, lane(128, 6), 960],
    ["a wide lane the room spreads thin, 100 ms calls: two carried tasks' worth, 200 ms", 5, 100, lane(128, 6), 200],
    ["a wide lane carrying 40: the base", 5, 480, lane(128, 40), 48],
    ["a lane with nothing running: the base", 5, 480, lane(6, 0), 48],
  ])("%s", (_label, setting, latency, shape, expected) => {
    expect(coalesceMs(setting, latency, shape)).toBe(expected);
  });
});
