// The lane executors (lane-executor.ts) against the real SwarmRoom (auxiliary orchestrator Worker)
// and the mock model: a ticket handed to an executor runs its lane from the executor's alarm, once
// however often it is handed over or its alarm runs, stops on cancel, and leaves no storage behind;
// the queue consumer with host "executor" acks a batch at once and the executors run the swarm.
import { createExecutionContext, createMessageBatch, getQueueResult, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TicketSchema, type Ticket } from "../../../src/core/ticket.ts";
import { createTaskDeps } from "../composition.ts";
import { consumeTasks } from "../consume-tasks.ts";
import { toExecutorHost } from "../../../src/core/executor-hosts.ts";
import { RELAY_NAME, toExecutorName, toLaneExecutors } from "../lane-executors.ts";
import { ledgerRows, messageIds, mockStats, startNumberedSwarm, tickets, waitFor, type MockStats, type NumberedSwarm } from "./room-swarm.ts";

const TENANT = "tk_executor_test";

type Swarm = NumberedSwarm;

const startSwarm = (taskCount: number, limits: Record<string, number> = {}): Promise<Swarm> => startNumberedSwarm("exec", TENANT, taskCount, limits);

/** One fresh ticket of `swarm`, as the room would send it. */
function ticketOf(swarm: Swarm): Ticket {
  const [message] = tickets(swarm.swarmId, 1);
  if (message === undefined) throw new Error("no ticket");
  return TicketSchema.parse(message.body);
}

function executorOf(ticket: Pick<Ticket, "swarm_id" | "ticket">) {
  return env.LANE_EXECUTOR.get(env.LANE_EXECUTOR.idFromName(toExecutorName(ticket)));
}

type ExecutorStub = ReturnType<typeof executorOf>;

/** What an executor keeps: its storage's keys and its alarm. */
function keptBy(stub: ExecutorStub): Promise<{ keys: string[]; alarm: number | null }> {
  return runInDurableObject(stub, async (_, state) => ({ keys: [...(await state.storage.list()).keys()], alarm: await state.storage.getAlarm() }));
}

/**
 * Runs the executor's alarm and waits until it has ended and kept nothing. The alarm is due at
 * once, so the runtime may fire it itself first: then this waits for that run.
 */
async function runAlarmToEnd(stub: ExecutorStub): Promise<void> {
  await runDurableObjectAlarm(stub);
  expect(await waitFor(async () => (await keptBy(stub)).keys.length === 0, 30_000)).toBe(true);
  expect(await keptBy(stub)).toEqual({ keys: [], alarm: null });
}

/** The mock's chat calls, as the executors' model client makes them (through the global fetch), each `delayMs` late. */
function watchModelCalls(delayMs = 0): { calls: () => number } {
  const real = globalThis.fetch;
  let calls = 0;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.includes("/chat/completions")) {
      calls += 1;
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    return real(input, init);
  });
  return { calls: () => calls };
}

/** Every task ended once and succeeded, and the ledger has one row per upstream call, each call id once. */
async function expectEveryTaskOnce(swarm: Swarm, before: MockStats): Promise<void> {
  const results = await swarm.results();
  expect(results.map((r) => r.state)).toEqual(swarm.taskIds.map(() => "succeeded"));
  const after = await mockStats();
  const upstream = after.calls - before.calls;
  const rows = await ledgerRows(swarm.swarmId, upstream);
  expect(rows).toHaveLength(upstream);
  expect(new Set(rows.map((r) => r.call_id)).size).toBe(rows.length);
  const okTasks = rows.filter((r) => r.status === "ok").map((r) => r.task_id);
  expect(okTasks.sort()).toEqual([...swarm.taskIds].sort());
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a lane executor (real SwarmRoom, mock model)", () => {
  it("start, then its alarm runs the ticket's lane: every task succeeds once, one ledger row per upstream call, and nothing is kept", async () => {
    const swarm = await startSwarm(8);
    const before = await mockStats();
    const model = watchModelCalls();
    const ticket = ticketOf(swarm);
    const stub = executorOf(ticket);

    expect(await toLaneExecutors(env.LANE_EXECUTOR).start(ticket, "short")).toEqual({ started: true });
    const held = await keptBy(stub);
    expect(held.keys).toEqual(["lane"]);
    expect(held.alarm).not.toBeNull();
    await runAlarmToEnd(stub);

    expect(model.calls()).toBe(8);
    await expectEveryTaskOnce(swarm, before);
    expect((await swarm.status()).state).toBe("completed");
  });

  it("started twice with the same ticket: the second start does nothing, and the lane runs once", async () => {
    const swarm = await startSwarm(8);
    const before = await mockStats();
    const model = watchModelCalls();
    const ticket = ticketOf(swarm);
    const executors = toLaneExecutors(env.LANE_EXECUTOR);

    const [first, second] = await Promise.all([executors.start(ticket, "short"), executors.start(ticket, "short")]);
    expect([first, second].map((r) => r.started).sort()).toEqual([false, true]);
    expect(await executors.start(ticket, "short")).toEqual({ started: false });
    await runAlarmToEnd(executorOf(ticket));

    expect(model.calls()).toBe(8);
    await expectEveryTaskOnce(swarm, before);
  });

  it("spread over another agent process: started through that process's relay, once however often, and the relay keeps nothing", async () => {
    // The local stack's second agent process, as the test pool has one: the same namespace as `more`.
    const swarm = await startSwarm(8);
    const before = await mockStats();
    const model = watchModelCalls();
    const ticket = Array.from({ length: 64 }, () => ticketOf(swarm)).find((t) => toExecutorHost(toExecutorName(t), 2) === 1);
    if (ticket === undefined) throw new Error("no ticket of the second host in 64");
    // The other process's namespace, as the real one, noting the names it is asked for.
    const asked: string[] = [];
    const other = {
      idFromName: (name: string) => {
        asked.push(name);
        return env.LANE_EXECUTOR.idFromName(name);
      },
      get: (id: DurableObjectId) => env.LANE_EXECUTOR.get(id),
    } as unknown as typeof env.LANE_EXECUTOR;
    const executors = toLaneExecutors(env.LANE_EXECUTOR, [other]);
    const relay = env.LANE_EXECUTOR.get(env.LANE_EXECUTOR.idFromName(RELAY_NAME));

    const [first, second] = await Promise.all([executors.start(ticket, "short"), executors.start(ticket, "short")]);
    expect([first, second].map((r) => r.started).sort()).toEqual([false, true]);
    // Only the relay was reached in the other process; it started the executor there.
    expect(asked).toEqual([RELAY_NAME, RELAY_NAME]);
    expect((await keptBy(executorOf(ticket))).keys).toEqual(["lane"]);
    expect(await keptBy(relay)).toEqual({ keys: [], alarm: null });
    await runAlarmToEnd(executorOf(ticket));

    expect(model.calls()).toBe(8);
    await expectEveryTaskOnce(swarm, before);
  });

  it("its alarm run twice at once (at-least-once: the runtime's retry while the first still runs): no task runs twice, and nothing is kept", async () => {
    const swarm = await startSwarm(16);
    const before = await mockStats();
    const model = watchModelCalls(20);
    const ticket = ticketOf(swarm);
    const stub = executorOf(ticket);
    expect(await toLaneExecutors(env.LANE_EXECUTOR).start(ticket, "short")).toEqual({ started: true });

    // Both runs read the held ticket before either ends: two lanes under one ticket.
    await runInDurableObject(stub, async (instance, state) => {
      await state.storage.deleteAlarm();
      await Promise.all([instance.alarm(), instance.alarm()]);
    });

    expect(await keptBy(stub)).toEqual({ keys: [], alarm: null });
    expect(model.calls()).toBe(16);
    await expectEveryTaskOnce(swarm, before);
    expect((await swarm.status()).state).toBe("completed");
  });

  it("a ticket handed over again after its lane ended: a new lane finds nothing to run, records nothing, and keeps nothing", async () => {
    const swarm = await startSwarm(8);
    const before = await mockStats();
    const model = watchModelCalls();
    const ticket = ticketOf(swarm);
    const executors = toLaneExecutors(env.LANE_EXECUTOR);
    expect(await executors.start(ticket, "short")).toEqual({ started: true });
    await runAlarmToEnd(executorOf(ticket));
    expect(model.calls()).toBe(8);

    // The executor forgot the ticket when its lane ended: a redelivery starts it again.
    expect(await executors.start(ticket, "short")).toEqual({ started: true });
    await runAlarmToEnd(executorOf(ticket));

    expect(model.calls()).toBe(8);
    await expectEveryTaskOnce(swarm, before);
    expect((await swarm.status()).state).toBe("completed");
  });

  it("cancel while its lane pulls: the lane stops, what it ran is recorded, the swarm ends cancelled, and nothing is kept", async () => {
    // A window of 4 and 50 ms a call: the lane is still pulling when the swarm is cancelled.
    const swarm = await startSwarm(60, { concurrency: 4 });
    const before = await mockStats();
    const model = watchModelCalls(50);
    const ticket = ticketOf(swarm);
    const stub = executorOf(ticket);
    expect(await toLaneExecutors(env.LANE_EXECUTOR).start(ticket, "short")).toEqual({ started: true });

    const lane = runAlarmToEnd(stub);
    expect(await waitFor(async () => model.calls() >= 6, 20_000)).toBe(true);
    await swarm.stub.cancel(TENANT);
    await lane;

    const status = await swarm.status();
    expect(status.state).toBe("cancelled");
    expect(status.counts.running).toBe(0);
    // Every call made is a task that succeeded; the rest were cancelled without a call.
    expect(status.counts.succeeded).toBe(model.calls());
    expect(model.calls()).toBeLessThan(60);
    expect(status.counts.succeeded + status.counts.cancelled).toBe(60);
    const after = await mockStats();
    expect(await ledgerRows(swarm.swarmId, after.calls - before.calls)).toHaveLength(after.calls - before.calls);
  });

  it("two executors on one swarm: both end when the swarm does, every task once, nothing kept", async () => {
    const swarm = await startSwarm(40);
    const before = await mockStats();
    const model = watchModelCalls(10);
    const [a, b] = [ticketOf(swarm), ticketOf(swarm)];
    const executors = toLaneExecutors(env.LANE_EXECUTOR);
    expect(await Promise.all([executors.start(a, "short"), executors.start(b, "short")])).toEqual([{ started: true }, { started: true }]);

    await Promise.all([runAlarmToEnd(executorOf(a)), runAlarmToEnd(executorOf(b))]);

    expect(model.calls()).toBe(40);
    await expectEveryTaskOnce(swarm, before);
    expect((await swarm.status()).state).toBe("completed");
  });
});

describe("the queue consumer hands tickets to executors (host executor)", () => {
  it("a batch of 2 tickets is acked once the executors hold them; the executors' alarms then run the swarm to completion", async () => {
    const swarm = await startSwarm(24);
    const before = await mockStats();
    const model = watchModelCalls();
    const messages = tickets(swarm.swarmId, 2);
    const batch = createMessageBatch("edgeswarm-tasks", messages);
    const ctx = createExecutionContext();

    await consumeTasks(batch, { ...createTaskDeps(env), host: "executor" });
    const result = await getQueueResult(batch, ctx);

    expect(result.explicitAcks.sort()).toEqual(messageIds(messages));
    expect(result.retryMessages).toEqual([]);
    const stubs = messages.map((m) => executorOf(TicketSchema.parse(m.body)));
    await Promise.all(stubs.map((stub) => runAlarmToEnd(stub)));

    expect(model.calls()).toBe(24);
    await expectEveryTaskOnce(swarm, before);
    expect((await swarm.status()).state).toBe("completed");
  });
});
