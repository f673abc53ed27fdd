// The call journal against the real SwarmRoom (auxiliary orchestrator Worker) and the mock model:
// calls reach the ledger through recordCalls and the lanes' pulls alike, one row per call, none twice.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { MessageBatchMessage, QueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import type { StartSwarmInput } from "../../../src/core/swarm-contract.ts";
import { createModelClient } from "../../../src/model/model-client.ts";
import type { ModelClient } from "../../../src/model/model-client.ts";
import { consumeTasks } from "../consume-tasks.ts";
import { toSwarmRooms } from "../swarm-rooms.ts";
import type { SwarmRoomRpc, SwarmRooms } from "../swarm-rooms.ts";
import { directGateway } from "./fake-gateway.ts";
import { LANE_DEFAULTS, messageIds, tickets, waitFor } from "./room-swarm.ts";

const TENANT = "tk_agent_journal_test";
let counter = 0;

async function startSwarm(taskCount: number, spec: { limits?: Record<string, number>; tools?: ["scratchpad"]; prompt?: string } = {}) {
  counter += 1;
  const swarmId = `sw_journal${Date.now().toString(36)}${counter}`;
  const taskIds = Array.from({ length: taskCount }, (_, i) => `task-${i + 1}`);
  const input: StartSwarmInput = {
    swarmId,
    tenant: TENANT,
    spec: {
      name: `journal test ${counter}`,
      model: "mock-1",
      system: "You are a test agent.",
      ...(spec.tools === undefined ? {} : { tools: spec.tools }),
      limits: LimitsSchema.parse({ concurrency: 100, ...spec.limits }),
    },
    tasks: taskIds.map((id) => ({ id, prompt: `${spec.prompt ?? ""}Summarize item ${id}.` })),
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toEqual({ created: true });
  return { swarmId, taskIds, stub };
}

/** The real SwarmRoom, counting the journal's recordCalls and the lanes' pulls; pulls from `failPullsFrom` on throw. */
function countingRooms(failPullsFrom: number | null = null) {
  const real = toSwarmRooms(env.SWARM_ROOM);
  const counts = { recordCalls: 0, journaledCalls: 0, pulls: 0, carriedCalls: 0 };
  const rooms: SwarmRooms = (swarmId) => {
    const stub = real(swarmId);
    const room: SwarmRoomRpc = {
      scratchpad: (request) => stub.scratchpad(request),
      startCalls: (starts) => stub.startCalls(starts),
      hedgeCall: (start) => stub.hedgeCall(start),
      async pull(request) {
        counts.pulls += 1;
        if (failPullsFrom !== null && counts.pulls >= failPullsFrom) throw new Error("Durable Object reset because its code was updated");
        counts.carriedCalls += request.reports.reduce((n, r) => n + r.calls.length, 0);
        return stub.pull(request);
      },
      async recordCalls(reports) {
        counts.recordCalls += 1;
        counts.journaledCalls += reports.reduce((n, r) => n + r.calls.length, 0);
        await stub.recordCalls(reports);
      },
      recordDeadTicket: (ticket) => stub.recordDeadTicket(ticket),
    };
    return room;
  };
  return { rooms, counts };
}

/** The real model client against the mock, each call `delayMs` late, counting calls and the tokens the upstream reported. */
function slowMock(delayMs: number) {
  const real = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY });
  const seen = { calls: 0, tokens: 0 };
  const client: ModelClient = {
    async complete(request) {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const result = await real.complete(request);
      seen.calls += 1;
      seen.tokens += result.usage?.total_tokens ?? 0;
      return result;
    },
  };
  return { client, seen };
}

async function deliver(messages: MessageBatchMessage<unknown>[], rooms: SwarmRooms, client: ModelClient, concurrency: number): Promise<QueueResult> {
  const batch = createMessageBatch("edgeswarm-tasks", messages);
  const ctx = createExecutionContext();
  await consumeTasks(batch, { ...LANE_DEFAULTS, rooms, gateway: directGateway(client), concurrency, headerSlots: 0 });
  return getQueueResult(batch, ctx);
}

/** The swarm's ledger rows once `count` of them are flushed (the SwarmRoom flushes ~50 ms after recording). */
async function ledgerRows(swarmId: string, count: number): Promise<{ call_id: string; attempt: number; total_tokens: number | null }[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { results } = await env.LEDGER_DB.prepare("SELECT call_id, attempt, total_tokens FROM ledger WHERE swarm_id = ? ORDER BY call_id")
      .bind(swarmId)
      .all<{ call_id: string; attempt: number; total_tokens: number | null }>();
    if (results.length >= count || Date.now() > deadline) return results;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("call journal with the real SwarmRoom", () => {
  it("journals a multi-turn agent's calls while it runs, and the pull's same calls add no row: ledger rows = model calls, no duplicates", async () => {
    // Three tool turns and the answer per task, each call ≥ 200 ms: the journal flushes turns before the outcome's pull.
    const swarm = await startSwarm(3, { tools: ["scratchpad"], prompt: "[mock:tool_turns=3] Use scratchpad_put, then answer. " });
    const { rooms, counts } = countingRooms();
    const model = slowMock(200);

    const result = await deliver(tickets(swarm.swarmId, 1), rooms, model.client, 3);

    expect(result.explicitAcks).toHaveLength(1);
    expect(model.seen.calls).toBe(12);
    expect(counts.recordCalls).toBeGreaterThanOrEqual(1);
    expect(counts.journaledCalls).toBeGreaterThanOrEqual(3);
    // Every call reached the room by the journal or by an outcome's pull (some by both).
    expect(counts.carriedCalls).toBe(12);
    const rows = await ledgerRows(swarm.swarmId, 12);
    expect(rows.map((r) => r.call_id)).toEqual(swarm.taskIds.flatMap((t) => [1, 2, 3, 4].map((turn) => `${swarm.swarmId}:${t}:1:${turn}`)).sort());
    expect(rows.reduce((sum, r) => sum + (r.total_tokens ?? 0), 0)).toBe(model.seen.tokens);
    const status = await swarm.stub.getStatus(TENANT);
    expect(status?.usage.calls).toBe(12);
    expect(status?.counts.succeeded).toBe(3);
  });

  it("keeps the calls of a lane whose every pull after the first fails, with their answers; the re-run after the lease finishes from those, calling no model", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    // Leases of 4 s (timeout_s + LEASE_GRACE_S 1): the broken lane's pull retries take about 2 s, and
    // the tasks must still be leased when it gives up (at 1 s they sometimes were not).
    const swarm = await startSwarm(2, { limits: { timeout_s: 3 } });
    const broken = countingRooms(2);
    const model = slowMock(0);
    const messages = tickets(swarm.swarmId, 1);

    const r1 = await deliver(messages, broken.rooms, model.client, 8);

    // The lane reached the room once (its grants), so its ticket is acked; no outcome was recorded,
    // the tasks are still leased, yet both billed calls are in the ledger.
    expect(r1.explicitAcks).toEqual(messageIds(messages));
    expect(broken.counts.pulls).toBeGreaterThanOrEqual(5);
    expect(model.seen.calls).toBe(2);
    expect((await ledgerRows(swarm.swarmId, 2)).map((r) => r.call_id)).toEqual(swarm.taskIds.map((t) => `${swarm.swarmId}:${t}:1:1`).sort());
    expect((await swarm.stub.getStatus(TENANT))?.counts.running).toBe(2);

    // The leases end (timeout_s + LEASE_GRACE_S); a fresh ticket runs attempt 2, which finds each
    // task's answer in its checkpoint (journaled with its call) and records the outcome from it.
    expect(await waitFor(async () => ((await swarm.stub.getStatus(TENANT))?.counts.running ?? 0) === 0, 30_000)).toBe(true);
    const healthy = countingRooms();
    const r2 = await deliver(tickets(swarm.swarmId, 1), healthy.rooms, model.client, 8);

    expect(r2.explicitAcks).toHaveLength(1);
    expect(model.seen.calls).toBe(2);
    const rows = await ledgerRows(swarm.swarmId, 2);
    expect(rows.map((r) => r.call_id)).toEqual(swarm.taskIds.map((t) => `${swarm.swarmId}:${t}:1:1`).sort());
    expect(rows.reduce((sum, r) => sum + (r.total_tokens ?? 0), 0)).toBe(model.seen.tokens);
    const status = await swarm.stub.getStatus(TENANT);
    expect(status?.usage.calls).toBe(2);
    expect(status?.counts.succeeded).toBe(2);
    // Each task's result is the answer its first attempt was paid for, under attempt 2.
    const page = await swarm.stub.getResults(TENANT, null, 10);
    expect(page?.results.map((r) => [r.state, r.attempts, typeof r.output === "string" && r.output.length > 0])).toEqual([
      ["succeeded", 2, true],
      ["succeeded", 2, true],
    ]);
  }, 60_000);
});
