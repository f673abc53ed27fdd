// The lane's header gate: at most N connections waiting for response headers (production's limit
// per invocation is 6), the rest queued first come, first served; 0 = no gate. Alone, through the
// model client (which frees a slot when the headers arrive) against a mock that holds its headers
// back, and through a lane.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { FILL_MIN_MS, HEADER_SLOTS_PER_INVOCATION } from "../../../src/core/lane-sizing.ts";
import { STANDBY_MAX } from "../../../src/core/standby.ts";
import { createModelClient, type ModelRequest } from "../../../src/model/model-client.ts";
import { createHeaderGate, HeaderSlotTimeout, takeHeaderSlot } from "../header-gate.ts";
import { directGateway } from "./fake-gateway.ts";
import { BASE, FakeRoom, roomsOf, run, ticketMessage } from "./fake-room.ts";

/** Lets every pending promise callback run. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

function request(n: number): ModelRequest {
  return {
    model: "mock-1",
    messages: [{ role: "user", content: `Summarize item ${n}.` }],
    tools: null,
    parallelToolCalls: null,
    maxOutputTokens: 16,
    timeoutMs: 10_000,
    responseFormat: null,
  };
}

/** A fetch to the mock whose headers come after `ttfbMs` and whose answer after `latencyMs`. */
function timedFetch(ttfbMs: number, latencyMs: number): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set("x-mock-ttfb-ms", String(ttfbMs));
    headers.set("x-mock-latency-ms", String(latencyMs));
    return fetch(input, { ...init, headers });
  };
}

/** What the agent does for each call: take a slot of the lane's gate, then call with it (the client frees it at the headers). */
async function completeGated(client: ReturnType<typeof createModelClient>, gate: ReturnType<typeof createHeaderGate>, n: number) {
  const slot = await takeHeaderSlot(gate);
  if (slot === null) throw new Error("no slot");
  return client.complete({ ...request(n), headerSlot: slot });
}

/**
 * A fetch to the mock that asks it to hold each response's headers back `ttfbMs`, and counts the
 * requests waiting for headers (from the request until its Response resolves) and the most at once.
 */
function headerCountingFetch(ttfbMs: number, laneOf: (body: string) => string = () => "") {
  const counts = { waiting: 0, maxWaiting: 0, requests: 0, waitingByLane: new Map<string, number>(), lanesWaitingAtOnce: 0 };
  const counting: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set("x-mock-ttfb-ms", String(ttfbMs));
    const lane = laneOf(typeof init?.body === "string" ? init.body : "");
    counts.requests += 1;
    counts.waiting += 1;
    counts.maxWaiting = Math.max(counts.maxWaiting, counts.waiting);
    counts.waitingByLane.set(lane, (counts.waitingByLane.get(lane) ?? 0) + 1);
    const lanesWaiting = [...counts.waitingByLane.values()].filter((n) => n > 0).length;
    counts.lanesWaitingAtOnce = Math.max(counts.lanesWaitingAtOnce, lanesWaiting);
    try {
      return await fetch(input, { ...init, headers });
    } finally {
      counts.waiting -= 1;
      counts.waitingByLane.set(lane, (counts.waitingByLane.get(lane) ?? 1) - 1);
    }
  };
  return { counting, counts };
}

describe("createHeaderGate", () => {
  it("never lets more than its slots be held, and queues the rest first come, first served", async () => {
    const gate = createHeaderGate(6);
    let held = 0;
    let maxHeld = 0;
    const order: number[] = [];
    const releases: (() => void)[] = [];
    const acquisitions = Array.from({ length: 10 }, (_, n) =>
      gate.acquire().then((release) => {
        held += 1;
        maxHeld = Math.max(maxHeld, held);
        order.push(n);
        releases.push(() => {
          held -= 1;
          release();
        });
      }),
    );
    await settle();
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(gate.waiting()).toBe(4);

    // Freed out of order, the slots still go to the waiters in the order they came.
    releases[3]?.();
    await settle();
    releases[0]?.();
    await settle();
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(gate.waiting()).toBe(2);
    while (releases.length > 0) {
      releases.shift()?.();
      await settle();
    }
    await Promise.all(acquisitions);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(maxHeld).toBe(6);
    expect(gate.waiting()).toBe(0);
  });

  it("frees one slot per acquisition however often its release is called", async () => {
    const gate = createHeaderGate(1);
    const release = await gate.acquire();
    let second = false;
    let third = false;
    void gate.acquire().then(() => (second = true));
    void gate.acquire().then(() => (third = true));
    release();
    release();
    await settle();
    expect([second, third]).toEqual([true, false]);
    expect(gate.waiting()).toBe(1);
  });

  it("a caller that must start by a deadline waits until then at most, leaves the queue, and the slot goes to the next in line", async () => {
    const gate = createHeaderGate(1);
    const release = await gate.acquire();
    const order: string[] = [];
    const late = gate
      .until(Date.now() + 30)
      .acquire()
      .then(
        () => order.push("late got a slot"),
        (error: unknown) => order.push(error instanceof HeaderSlotTimeout ? "late gave up" : "late failed otherwise"),
      );
    const patient = gate.acquire().then((free) => {
      order.push("patient got a slot");
      return free;
    });
    expect(gate.waiting()).toBe(2);
    await late;
    expect(order).toEqual(["late gave up"]);
    expect(gate.waiting()).toBe(1);
    release();
    (await patient)();
    expect(order).toEqual(["late gave up", "patient got a slot"]);
    // Nothing held and nothing waiting: the one who gave up took no slot with it.
    const again = await Promise.race([gate.acquire(), new Promise<null>((resolve) => setTimeout(() => resolve(null), 50))]);
    expect(again).not.toBeNull();
  });

  it("grants a free slot even past the deadline (it only bounds a wait), and refuses at once to wait past it", async () => {
    const gate = createHeaderGate(1);
    const past = Date.now() - 1;
    const release = await gate.until(past).acquire();
    await expect(gate.until(past).acquire()).rejects.toBeInstanceOf(HeaderSlotTimeout);
    expect(gate.waiting()).toBe(0);
    release();
  });

  it("tells its drain listeners once, when its queue empties by a slot or by a caller giving up its place", async () => {
    const gate = createHeaderGate(1);
    const drains: string[] = [];
    const release = await gate.acquire();
    // Nothing queues: a listener waits for the next drain, not this empty queue.
    gate.onceDrained(() => drains.push("early"));
    await settle();
    expect(drains).toEqual([]);
    const second = gate.acquire();
    const third = gate.acquire();
    gate.onceDrained(() => drains.push("later"));
    release();
    await settle();
    // One still queued: no drain yet.
    expect(drains).toEqual([]);
    (await second)();
    expect(gate.waiting()).toBe(0);
    expect(drains).toEqual(["early", "later"]);
    // Told once: the next drain tells only who listens again.
    const giveUp = gate.until(Date.now() + 20).acquire();
    gate.onceDrained(() => drains.push("gave up"));
    await expect(giveUp).rejects.toBeInstanceOf(HeaderSlotTimeout);
    expect(drains).toEqual(["early", "later", "gave up"]);
    (await third)();
  });

  it("with 0 slots is no gate: every acquisition is granted at once", async () => {
    const gate = createHeaderGate(0);
    const releases = await Promise.all(Array.from({ length: 100 }, () => gate.acquire()));
    expect(releases).toHaveLength(100);
    expect(gate.waiting()).toBe(0);
    for (const release of releases) release();
  });
});

describe("the header gate through the model client (mock upstream holding headers back 80 ms)", () => {
  it("keeps at most 6 of 20 concurrent calls waiting for headers; the others wait for a slot, and all answer", async () => {
    const { counting, counts } = headerCountingFetch(80);
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: counting });
    const gate = createHeaderGate(HEADER_SLOTS_PER_INVOCATION);

    const results = await Promise.all(Array.from({ length: 20 }, (_, n) => completeGated(client, gate, n)));

    expect(results.every((r) => r.ok)).toBe(true);
    expect(counts.requests).toBe(20);
    expect(counts.maxWaiting).toBe(6);
    expect(gate.waiting()).toBe(0);
    // The time to headers is the call's own (its wait for a slot is not counted).
    for (const result of results) expect(result.ttfbMs ?? 0).toBeGreaterThanOrEqual(70);
  });

  it("without a gate, the same calls all wait for headers at once (what the gate prevents)", async () => {
    const { counting, counts } = headerCountingFetch(80);
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: counting });

    const results = await Promise.all(Array.from({ length: 20 }, (_, n) => client.complete(request(n))));

    expect(results.every((r) => r.ok)).toBe(true);
    expect(counts.maxWaiting).toBe(20);
  });

  it("a lane with headerSlots 6 keeps at most 6 of its calls waiting for headers, runs every task, and reports the capacity its gate carries", async () => {
    const { counting, counts } = headerCountingFetch(80);
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: counting });
    const room = new FakeRoom("sw_gate", { tasks: Array.from({ length: 24 }, (_, i) => `t${i + 1}`) });

    const result = await run([ticketMessage("m1", "sw_gate")], {
      ...BASE,
      concurrency: 24,
      headerSlots: 6,
      rooms: roomsOf(room),
      gateway: directGateway(client),
    });

    expect(result.explicitAcks).toEqual(["m1"]);
    expect(room.count("succeeded")).toBe(24);
    expect(counts.requests).toBe(24);
    expect(counts.maxWaiting).toBe(6);
    // Before any call it claims its concurrency; once calls are measured, what 6 header slots carry
    // at that time to headers (headers ≈ the whole call here, so about 6).
    expect(room.pulls[0]?.slots).toBe(24);
    // (A lane that stops reports no slots: the last pull that still counts is the one to read.)
    const lastSized = room.pulls.filter((pull) => pull.slots > 0).at(-1);
    expect(lastSized?.slots).toBeLessThan(24);
    expect(lastSized?.slots).toBeGreaterThanOrEqual(6);
  });
});

describe("a lane on a prior (Ticket.latency_ms: an earlier swarm's lanes of the model)", () => {
  const priorTicket = (id: string, swarmId: string) => ({
    ...ticketMessage(id, swarmId),
    body: { v: 2, swarm_id: swarmId, ticket: id, slots: 40, latency_ms: 300 },
  });

  it("runs on its gate's 6 slots until its first headers, then asks at once for what they carry", async () => {
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(0, 300) });
    const room = new FakeRoom("sw_prior_early", { tasks: Array.from({ length: 40 }, (_, i) => `t${i + 1}`) });

    await run([priorTicket("m1", "sw_prior_early")], { ...BASE, concurrency: 40, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(40);
    const [first, second] = room.pulls;
    // The first pull takes the gate's 6 and says the lane carries what the room counted it for.
    expect(first?.want).toBe(6);
    expect(first?.slots).toBe(40);
    // Headers came at once: before any task ended, the lane asked for the rest of its 40.
    expect(second?.reports).toEqual([]);
    expect(second?.want).toBe(34);
  });

  it("stays on its 6 slots when the headers come with the answer (the prior no longer holds)", async () => {
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(300, 300) });
    const room = new FakeRoom("sw_prior_late", { tasks: Array.from({ length: 12 }, (_, i) => `t${i + 1}`) });

    await run([priorTicket("m1", "sw_prior_late")], { ...BASE, concurrency: 40, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(12);
    expect(room.pulls[0]?.want).toBe(6);
    // No pull asked for more than the 6 its gate carries: a window of 40 never queued at the gate.
    expect(Math.max(...room.pulls.map((pull) => pull.want))).toBeLessThanOrEqual(6);
    // Once it has timed its calls it reports what it carries (about 6), not the prior's 40.
    const lastSized = room.pulls.filter((pull) => pull.slots > 0 && pull.timing !== undefined).at(-1);
    expect(lastSized?.slots).toBeLessThan(12);
  });
});

describe("a lane on no prior (a tenant's first swarm of the model)", () => {
  const firstTicket = (id: string, swarmId: string) => ({ ...ticketMessage(id, swarmId), body: { v: 2, swarm_id: swarmId, ticket: id, slots: 6 } });

  it("tells the room its first headers took FILL_MIN_MS or more, once, before any call has ended", async () => {
    // Headers at 300 ms of 900 ms calls: lanes of 6 fill a window within one time to headers.
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(300, 900) });
    const room = new FakeRoom("sw_first_slow", { tasks: Array.from({ length: 12 }, (_, i) => `t${i + 1}`) });

    await run([firstTicket("m1", "sw_first_slow")], { ...BASE, concurrency: 40, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(12);
    const told = room.pulls.filter((pull) => pull.firstHeadersMs !== undefined);
    expect(told).toHaveLength(1);
    expect(told[0]?.firstHeadersMs).toBeGreaterThanOrEqual(FILL_MIN_MS);
    expect(told[0]?.reports).toEqual([]);
    expect(told[0]?.timing).toBeUndefined();
    // Its calls outlive their headers, but the room sends lanes of 6 for the window now: the lane
    // does not grow until it has timed a call.
    const beforeAnyEnd = room.pulls.slice(
      0,
      room.pulls.findIndex((pull) => pull.reports.length > 0),
    );
    expect(beforeAnyEnd.every((pull) => pull.slots === 6)).toBe(true);
  });

  it("tells it once its first headers have not come by FILL_MIN_MS (headers with a 900 ms answer), before the call ends", async () => {
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(900, 900) });
    const room = new FakeRoom("sw_first_bound", { tasks: Array.from({ length: 6 }, (_, i) => `t${i + 1}`) });

    await run([firstTicket("m1", "sw_first_bound")], { ...BASE, concurrency: 40, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(6);
    const toldAt = room.pulls.findIndex((pull) => pull.firstHeadersMs !== undefined);
    const firstReportAt = room.pulls.findIndex((pull) => pull.reports.length > 0);
    expect(toldAt).toBeGreaterThanOrEqual(0);
    expect(room.pulls.filter((pull) => pull.firstHeadersMs !== undefined)).toHaveLength(1);
    expect(room.pulls[toldAt]?.firstHeadersMs).toBeGreaterThanOrEqual(FILL_MIN_MS);
    expect(room.pulls[toldAt]?.firstHeadersMs).toBeLessThan(900);
    expect(toldAt).toBeLessThan(firstReportAt);
  });

  it("makes no pull to say its first headers are slow when the room already counts the swarm gate-bound", async () => {
    // A header-bound prior (or another lane's note) set the room's mind: 1,000 calls of 3 s with
    // headers at the answer, W = 1,000, made one such pull in each of 167 lanes, a sixth of the
    // swarm's Durable Object requests, and told the room nothing.
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(900, 900) });
    const room = new FakeRoom("sw_first_known", { tasks: Array.from({ length: 6 }, (_, i) => `t${i + 1}`) });
    room.gateBound = true;

    await run([firstTicket("m1", "sw_first_known")], { ...BASE, concurrency: 40, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(6);
    expect(room.pulls.every((pull) => pull.firstHeadersMs === undefined)).toBe(true);
    // Its first pull, then the one its calls' outcomes bring: nothing between them.
    expect(room.pulls.findIndex((pull) => pull.reports.length > 0)).toBe(1);
    // Nor does it grow on its calls' running time: it stays on the room's 6, as a lane that said it.
    expect(room.pulls.every((pull) => pull.slots === 6)).toBe(true);
  });

  it("grows past the room's 6 while its first calls run, headers in at once, before any call has answered", async () => {
    // Calls of 2 s with headers at once: the lane's gate carries its whole concurrency, which a
    // lane learned only from a call's end, after running 6 for the whole call. (Growing to 40 takes
    // a few hundred ms of timers; with 800 ms calls a loaded CI machine once saw 39 before the
    // first answer.)
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(0, 2_000) });
    const room = new FakeRoom("sw_first_long", { tasks: Array.from({ length: 40 }, (_, i) => `t${i + 1}`) });

    await run([firstTicket("m1", "sw_first_long")], { ...BASE, concurrency: 40, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(40);
    expect(room.pulls[0]?.want).toBe(6);
    const beforeAnyEnd = room.pulls.slice(
      0,
      room.pulls.findIndex((pull) => pull.reports.length > 0),
    );
    // Before the first answer, pulls asked for the rest of the 40 and said the lane carries them.
    expect(beforeAnyEnd.reduce((sum, pull) => sum + pull.want, 0)).toBe(40);
    expect(Math.max(...beforeAnyEnd.map((pull) => pull.slots))).toBe(40);
    expect(beforeAnyEnd.every((pull) => pull.timing === undefined)).toBe(true);
  });

  it("asks for no more while the window grants it less than it asked, until its tasks end", async () => {
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(0, 1_000) });
    const room = new FakeRoom("sw_first_full", { tasks: Array.from({ length: 20 }, (_, i) => `t${i + 1}`), window: 10 });

    await run([firstTicket("m1", "sw_first_full")], { ...BASE, concurrency: 40, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(20);
    const beforeAnyEnd = room.pulls.slice(
      0,
      room.pulls.findIndex((pull) => pull.reports.length > 0),
    );
    // 6, then twice as many once its first calls have run twice their time to headers, of which the
    // window of 10 grants 4: no pull more over the second those calls run.
    expect(beforeAnyEnd.map((pull) => pull.slots)).toEqual([6, expect.any(Number)]);
    expect(beforeAnyEnd[1]?.slots).toBeGreaterThanOrEqual(12);
  });

  it("holding standby tasks when nothing is left to hand out, grows on, and the window runs them before any call has answered", async () => {
    // The room grants a growing lane standby tasks while the window has room (no other lane has a
    // free slot); the pulls the lane grows by run them (`run`). A lane that stopped growing once
    // nothing was left to hand out started them only in the places of its first calls, a whole call
    // later. How much the second pull asks for depends on when it goes: an untimed lane carries 6 ×
    // its first calls' running time ÷ their time to headers (toUntimedLaneSlots). With headers at
    // once it asked for 6–20 here, and in a CI run for every slot the lane had (41 tasks for 40), so
    // no standby task could run before a call ended. Headers at 200 ms keep the lane growing for
    // 1.3 s, half of the calls' 2.6 s (its second pull asked for 6 in five runs under three busy
    // loops); and the room is given, as that pull comes, just enough tasks that it hands out
    // everything with some standby: all it asks, and half the standby it asks for, within what the
    // lane can run.
    const concurrency = 40;
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(200, 2_600) });
    const room = new FakeRoom("sw_first_held", { tasks: Array.from({ length: 7 }, (_, i) => `t${i + 1}`), standbyWhenWantMet: true });
    room.beforePull = (n, request) => {
      if (n !== 2) return;
      const pending = [...room.tasks.values()].filter((task) => task.state === "pending").length;
      const free = concurrency - (request.running ?? 0) - request.want;
      const standby = Math.max(1, Math.min(free, Math.floor(Math.min(request.standby ?? 0, STANDBY_MAX) / 2)));
      const more = request.want + standby - pending;
      room.addTasks(Array.from({ length: more }, (_, i) => `t${room.tasks.size + i + 1}`));
    };

    await run([firstTicket("m1", "sw_first_held")], { ...BASE, concurrency, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    const tasks = room.tasks.size;
    expect(tasks).toBeGreaterThan(7);
    expect(room.count("succeeded")).toBe(tasks);
    const firstReportAt = room.pulls.findIndex((pull) => pull.reports.length > 0);
    const answers = room.answers.slice(0, firstReportAt);
    // The second pull, before any call answered, got the rest: nothing left, some of it standby.
    expect(firstReportAt).toBeGreaterThan(2);
    expect(answers[1]?.waiting).toBe(0);
    expect(answers[1]?.granted.some((task) => task.standby === true)).toBe(true);
    // Every task started before the first call answered, standby ones in the window's room.
    const started = answers.flatMap((answer) => [...answer.granted.filter((task) => task.standby !== true), ...(answer.run ?? [])]);
    expect(started).toHaveLength(tasks);
  }, 15_000);

  it("stays on the room's 6 while its first calls have no headers (headers with the answer)", async () => {
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(600, 600) });
    const room = new FakeRoom("sw_first_late", { tasks: Array.from({ length: 12 }, (_, i) => `t${i + 1}`) });

    await run([firstTicket("m1", "sw_first_late")], { ...BASE, concurrency: 40, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(12);
    const beforeAnyEnd = room.pulls.slice(
      0,
      room.pulls.findIndex((pull) => pull.reports.length > 0),
    );
    expect(beforeAnyEnd.length).toBeGreaterThan(0);
    expect(beforeAnyEnd.every((pull) => pull.slots === 6)).toBe(true);
    expect(beforeAnyEnd.reduce((sum, pull) => sum + pull.want, 0)).toBe(6);
  });

  it("says nothing of headers that come early", async () => {
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(0, 300) });
    const room = new FakeRoom("sw_first_early", { tasks: Array.from({ length: 12 }, (_, i) => `t${i + 1}`) });

    await run([firstTicket("m1", "sw_first_early")], { ...BASE, concurrency: 40, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(12);
    expect(room.pulls.every((pull) => pull.firstHeadersMs === undefined)).toBe(true);
  });
});

describe("a header-bound lane's standby tasks (headers with the answer)", () => {
  it("asks for standby tasks that cover the wait it makes before each pull, up to three times its slots", async () => {
    // Headers with the answer: the gate keeps the lane at about 6, and its outcomes wait for two
    // slots' worth of company (coalesceMs) while its standby tasks fill the freed slots. Standby
    // asked for as if it pulled at once (3–6 tasks) ran dry before every pull, and freed slots
    // waited for it.
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: timedFetch(60, 60) });
    const room = new FakeRoom("sw_standby_wait", { tasks: Array.from({ length: 90 }, (_, i) => `t${i + 1}`), window: 6 });
    const ticket = { ...ticketMessage("m1", "sw_standby_wait"), body: { v: 2, swarm_id: "sw_standby_wait", ticket: "m1", slots: 6 } };

    await run([ticket], { ...BASE, concurrency: 40, headerSlots: 6, coalesce: { ms: 5, outcomes: 32 }, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(90);
    // Before its calls are timed it asks for its slots' worth, as any lane does: its first tasks end together.
    expect(room.pulls[0]?.standby).toBe(6);
    const timed = room.pulls.filter((pull) => pull.timing !== undefined && pull.draining !== true && !pull.final);
    expect(timed.length).toBeGreaterThan(2);
    for (const pull of timed) {
      const held = (pull.standby ?? 0) + (pull.held?.length ?? 0);
      const runs = Math.min(pull.slots, (pull.running ?? 0) + pull.want);
      // What its running tasks end over the wait (two slots' worth), within three times its slots.
      expect(held).toBeGreaterThanOrEqual(2 * runs);
      expect(held).toBeLessThanOrEqual(3 * pull.slots);
    }
  });
});

describe("a header-bound lane whose standby tasks run out (headers with the answer)", () => {
  /**
   * One lane of 6 (headers with the answer, `latencyOf(taskId)` after each send) on a room of a
   * window of 6 whose every answer takes `delayMs`, and that counts the swarm gate-bound from the
   * start (a header-bound prior: the lane makes no pull to say its first headers are slow). Returns
   * the room and when each task's call was sent.
   */
  async function runLaneOf6(swarmId: string, tasks: number, delayMs: number, latencyOf: (taskId: string) => number, leaseMs?: number) {
    const startedAt = new Map<string, number>();
    const perTask: typeof fetch = (input, init) => {
      const taskId = /prompt of (t\d+)/.exec(typeof init?.body === "string" ? init.body : "")?.[1] ?? "";
      startedAt.set(taskId, Date.now());
      return timedFetch(latencyOf(taskId), latencyOf(taskId))(input, init);
    };
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: perTask });
    const room = new FakeRoom(swarmId, {
      tasks: Array.from({ length: tasks }, (_, i) => `t${i + 1}`),
      window: 6,
      ...(leaseMs === undefined ? {} : { leaseMs }),
    });
    room.gateBound = true;
    const pull = room.pull.bind(room);
    room.pull = async (request) => {
      const answer = await pull(request);
      await scheduler.wait(delayMs);
      return answer;
    };
    const ticket = { ...ticketMessage("m1", swarmId), body: { v: 2, swarm_id: swarmId, ticket: "m1", slots: 6 } };
    await run([ticket], { ...BASE, concurrency: 40, headerSlots: 6, coalesce: { ms: 5, outcomes: 32 }, rooms: roomsOf(room), gateway: directGateway(client) });
    return { room, startedAt };
  }

  it("pulls as soon as its standby tasks run out, so the next slot to free finds one", async () => {
    // Its first grant: t1–t6 and, as standby, t7–t12, a wave's worth. t1 ends at 300 ms and
    // t2–t6 at 400 ms: all six standby tasks take their slots, and none is left. It used to pull
    // only once a slot stood empty (t7's end at 900 ms), with its outcomes waiting for company
    // meanwhile, so that slot waited for the pull's answer: a round of 200 ms calls, each of a
    // header-bound lane's rounds, waited a pull for its first slots (1,000 × 200 ms, W = 100).
    const latencyOf = (taskId: string): number => {
      const n = Number(taskId.slice(1));
      return n === 1 ? 300 : n <= 6 ? 400 : n <= 12 ? 600 : 300;
    };
    const { room, startedAt } = await runLaneOf6("sw_standby_out", 18, 250, latencyOf);

    expect(room.count("succeeded")).toBe(18);
    expect(room.grants.slice(6, 12).every((task) => task.standby === true)).toBe(true);
    // t13 took t7's slot as it ended, from the standby tasks of a pull made before: not the
    // pull's 250 ms later.
    const t7Ended = (startedAt.get("t7") ?? 0) + latencyOf("t7");
    expect(startedAt.get("t13") ?? Number.POSITIVE_INFINITY).toBeLessThan(t7Ended + 100);
  });

  it("waits for company up to one long call, never past the moment its leases are due for renewal", async () => {
    // Calls of 5 s (headers with the answer) and leases of 2 s, renewed when 1 s is left. t1–t6 end
    // together at 5 s, the standby tasks t7–t12 take their slots, and the pull then brings t13–t18
    // as standby. t7 ends 600 ms later and t13 takes its slot: with a mean call of about 4 s, t7's
    // outcome may wait for company that long (one long call: a pull an outcome cost a lane of
    // reasoning-model calls 0.8 SwarmRoom requests a task). The leases renewed at 5 s are due again
    // at 6 s: the wait ends then, and the pull renews them. Waiting on (to 7.6 s here), t8–t12
    // would lose their leases at 7 s and be handed out again.
    const latencyOf = (taskId: string): number => {
      const n = Number(taskId.slice(1));
      return n === 7 ? 600 : n >= 13 ? 1_000 : 5_000;
    };
    const { room } = await runLaneOf6("sw_long_wait", 18, 20, latencyOf, 2_000);

    expect(room.count("succeeded")).toBe(18);
    expect(room.grants).toHaveLength(18);
    // The room's alarm takes back a lease at its end (this fake room only when the next pull comes):
    // from the first grant on, each pull that renews leases came less than a lease after the last.
    const renewedAt = room.pulledAt.filter((_at, i) => i === 0 || (room.pulls[i]?.renew?.length ?? 0) > 0);
    const gaps = renewedAt.slice(1).map((at, i) => at - (renewedAt[i] ?? at));
    expect(Math.max(...gaps)).toBeLessThan(2_000);
    // t7's outcome waited for company past its end, and went with a renewal.
    const reportedT7 = room.pulls.find((pull) => pull.reports.some((report) => report.taskId === "t7"));
    expect(reportedT7?.renew?.length ?? 0).toBeGreaterThan(0);
  }, 30_000);

  it("fills the slots that end while its pull is on its way from the standby tasks the answer brings", async () => {
    // t1–t6 end at 500 ms and their slots take the six standby tasks t7–t12; t7 and t8 end 100 ms
    // later, while the pull for more is on its way (the room answers in 200 ms). Those two slots
    // run again when the answer comes, not when one of the lane's calls next ends (t9's, at 1,100 ms).
    const latencyOf = (taskId: string): number => {
      const n = Number(taskId.slice(1));
      return n <= 6 ? 500 : n <= 8 ? 100 : 600;
    };
    const { room, startedAt } = await runLaneOf6("sw_standby_vacant", 18, 200, latencyOf);

    expect(room.count("succeeded")).toBe(18);
    const t9Ended = (startedAt.get("t9") ?? 0) + latencyOf("t9");
    for (const taskId of ["t13", "t14"]) expect(startedAt.get(taskId) ?? Number.POSITIVE_INFINITY).toBeLessThan(t9Ended - 150);
  });
});

describe("one header gate per invocation (lanes hosted by the consumer)", () => {
  it("two lanes of one queue batch never hold more than 6 calls waiting for headers between them, and every task runs once", async () => {
    // Which swarm a request is for: the fake rooms' prompts are `prompt of <task id>`.
    const { counting, counts } = headerCountingFetch(80, (body) => (body.includes("prompt of a") ? "a" : body.includes("prompt of b") ? "b" : "?"));
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: counting });
    const a = new FakeRoom("sw_gate_a", { tasks: Array.from({ length: 24 }, (_, i) => `a${i + 1}`) });
    const b = new FakeRoom("sw_gate_b", { tasks: Array.from({ length: 24 }, (_, i) => `b${i + 1}`) });

    const result = await run([ticketMessage("ma", "sw_gate_a"), ticketMessage("mb", "sw_gate_b")], {
      ...BASE,
      host: "consumer",
      // Each lane alone would keep 12 calls waiting for headers: two gates of 6 would allow 12.
      concurrency: 12,
      headerSlots: 6,
      rooms: roomsOf(a, b),
      gateway: directGateway(client),
    });

    expect(result.explicitAcks.sort()).toEqual(["ma", "mb"]);
    // The two lanes ran side by side (both had calls waiting for headers at once), yet the batch never
    // had more than its 6 waiting: the slots are the invocation's, not each lane's.
    expect(counts.lanesWaitingAtOnce).toBe(2);
    expect(counts.maxWaiting).toBe(HEADER_SLOTS_PER_INVOCATION);
    expect(counts.waitingByLane.get("?")).toBeUndefined();
    // Both lanes ran their swarms to the end in the one batch: a lane with nothing running still
    // asks for tasks when the shared gate's queue is the other lane's. Every task ran once.
    expect(a.count("succeeded")).toBe(24);
    expect(b.count("succeeded")).toBe(24);
    expect(counts.requests).toBe(48);
    expect(counts.maxWaiting).toBe(HEADER_SLOTS_PER_INVOCATION);
  });
});

describe("a lane whose calls queue at the gate while the room still has tasks", () => {
  it("pulls for its open slots when the gate's queue drains, not when a task ends", async () => {
    // Six quick calls time the lane: it carries its 30 (headers at 10 ms of 300). The room then has
    // 18 tasks of 2.5 s with headers at 150 ms: 12 queue behind the gate's 6 for 300 ms, and the
    // outcomes of the first round go in pulls that ask for nothing while they queue (more tasks
    // would wait there too). The room gets 16 more tasks as those pulls come. Nothing ended for
    // 2.5 s after that, and nothing else woke the lane: its 12 open slots stayed empty a whole call
    // (2,000 calls of 1 s, W = 1,000, early headers: a partial third round).
    const timingOf = (taskId: string): { ttfbMs: number; latencyMs: number } => {
      const n = Number(taskId.slice(1));
      if (n <= 6) return { ttfbMs: 10, latencyMs: 300 };
      if (n <= 24) return { ttfbMs: 150, latencyMs: 2_500 };
      return { ttfbMs: 10, latencyMs: 100 };
    };
    const startedAt = new Map<string, number>();
    const perTask: typeof fetch = (input, init) => {
      const taskId = /prompt of (t\d+)/.exec(typeof init?.body === "string" ? init.body : "")?.[1] ?? "";
      startedAt.set(taskId, Date.now());
      const { ttfbMs, latencyMs } = timingOf(taskId);
      return timedFetch(ttfbMs, latencyMs)(input, init);
    };
    const client = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY, fetch: perTask });
    const room = new FakeRoom("sw_gate_drain", { tasks: Array.from({ length: 6 }, (_, i) => `t${i + 1}`) });
    let phase = 0;
    room.beforePull = (_n, request) => {
      if (phase !== 0 || request.reports.length === 0) return;
      phase = 1;
      room.addTasks(Array.from({ length: 18 }, (_, i) => `t${i + 7}`));
    };
    room.afterPull = () => {
      if (phase !== 1) return;
      phase = 2;
      room.addTasks(Array.from({ length: 16 }, (_, i) => `t${i + 25}`));
    };
    const ticket = { ...ticketMessage("m1", "sw_gate_drain"), body: { v: 2, swarm_id: "sw_gate_drain", ticket: "m1", slots: 6 } };

    await run([ticket], { ...BASE, concurrency: 30, headerSlots: 6, rooms: roomsOf(room), gateway: directGateway(client) });

    expect(room.count("succeeded")).toBe(40);
    // Some pull asked for nothing while calls queued and the room had tasks: the case this is about.
    const heldBack = room.pulls.findIndex((pull, i) => pull.want === 0 && (pull.running ?? 0) > 0 && (room.answers[i]?.waiting ?? 0) > 0);
    expect(heldBack).toBeGreaterThan(0);
    // The tasks added after the first round started once the queue had drained, long before the
    // first of the 2.5 s calls ended (about 470 ms after t7, against 2,500 without the drain's wake).
    const firstSlowStart = Math.min(...Array.from({ length: 18 }, (_, i) => startedAt.get(`t${i + 7}`) ?? Number.POSITIVE_INFINITY));
    const laterStart = Math.min(...Array.from({ length: 16 }, (_, i) => startedAt.get(`t${i + 25}`) ?? Number.POSITIVE_INFINITY));
    expect(laterStart - firstSlowStart).toBeLessThan(1_500);
  }, 15_000);
});
