// The call journal against the real SwarmRoom (auxiliary orchestrator Worker) and the mock model:
// calls reach the ledger through recordCalls and recordResults alike, one row per call, none twice.
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

const TENANT = "tk_agent_journal_test";
let counter = 0;

async function startSwarm(taskCount: number, limits: Partial<{ timeout_s: number }> = {}) {
  counter += 1;
  const swarmId = `sw_journal${Date.now().toString(36)}${counter}`;
  const taskIds = Array.from({ length: taskCount }, (_, i) => `task-${i + 1}`);
  const input: StartSwarmInput = {
    swarmId,
    tenant: TENANT,
    spec: { name: `journal test ${counter}`, model: "mock-1", system: "You are a test agent.", limits: LimitsSchema.parse({ concurrency: 100, ...limits }) },
    tasks: taskIds.map((id) => ({ id, prompt: `Summarize item ${id}.` })),
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toEqual({ created: true });
  return { swarmId, taskIds, stub };
}

function packets(swarmId: string, taskIds: string[], attempts = 1): MessageBatchMessage<unknown>[] {
  return taskIds.map((taskId) => ({ id: `${swarmId}-${taskId}-${attempts}`, timestamp: new Date(), attempts, body: { v: 1, swarm_id: swarmId, task_ids: [taskId] } }));
}

/** The real SwarmRoom, counting the journal's recordCalls; `failRecords` makes every recordResults throw. */
function countingRooms(failRecords = false) {
  const real = toSwarmRooms(env.SWARM_ROOM);
  const counts = { recordCalls: 0, journaledCalls: 0, recordResults: 0 };
  const rooms: SwarmRooms = (swarmId) => {
    const stub = real(swarmId);
    const room: SwarmRoomRpc = {
      claim: (taskIds, options) => stub.claim(taskIds, options),
      scratchpad: (request) => stub.scratchpad(request),
      async recordResults(reports) {
        counts.recordResults += 1;
        if (failRecords) throw new Error("Durable Object reset because its code was updated");
        return stub.recordResults(reports);
      },
      async recordCalls(reports) {
        counts.recordCalls += 1;
        counts.journaledCalls += reports.reduce((n, r) => n + r.calls.length, 0);
        await stub.recordCalls(reports);
      },
      recordDeadLetter: (taskIds) => stub.recordDeadLetter(taskIds),
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
  await consumeTasks(batch, { rooms, gateway: directGateway(client), concurrency, inlineRetryMaxS: 2 });
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
  it("journals calls during a slow batch, and the record's same calls add no row: ledger rows = model calls, no duplicates", async () => {
    const swarm = await startSwarm(6);
    const { rooms, counts } = countingRooms();
    // Two calls at a time, each ≥ 200 ms: the batch lasts ≥ 600 ms, so the journal flushes before the record.
    const model = slowMock(200);

    const result = await deliver(packets(swarm.swarmId, swarm.taskIds), rooms, model.client, 2);

    expect(result.explicitAcks).toHaveLength(6);
    expect(model.seen.calls).toBe(6);
    expect(counts.recordCalls).toBeGreaterThanOrEqual(1);
    expect(counts.journaledCalls).toBeGreaterThanOrEqual(2);
    expect(counts.recordResults).toBe(1);
    const rows = await ledgerRows(swarm.swarmId, 6);
    expect(rows.map((r) => r.call_id)).toEqual(swarm.taskIds.map((t) => `${swarm.swarmId}:${t}:1:1`).sort());
    expect(rows.reduce((sum, r) => sum + (r.total_tokens ?? 0), 0)).toBe(model.seen.tokens);
    const status = await swarm.stub.getStatus(TENANT);
    expect(status?.usage.calls).toBe(6);
    expect(status?.counts.succeeded).toBe(6);
  });

  it(
    "keeps the calls of a batch whose every recordResults fails; the re-run after the lease adds one row per new call",
    async () => {
      vi.spyOn(console, "error").mockImplementation(() => {});
      const swarm = await startSwarm(2, { timeout_s: 1 });
      const broken = countingRooms(true);
      const model = slowMock(0);
      const messages = packets(swarm.swarmId, swarm.taskIds);

      const r1 = await deliver(messages, broken.rooms, model.client, 8);

      // No outcome recorded: both messages retried, the tasks still leased, yet both billed calls are in the ledger.
      expect(r1.explicitAcks).toEqual([]);
      expect(r1.retryMessages).toHaveLength(2);
      expect(broken.counts.recordResults).toBe(4);
      expect(model.seen.calls).toBe(2);
      expect((await ledgerRows(swarm.swarmId, 2)).map((r) => r.call_id)).toEqual(swarm.taskIds.map((t) => `${swarm.swarmId}:${t}:1:1`).sort());
      expect((await swarm.stub.getStatus(TENANT))?.counts.running).toBe(2);

      // The leases end (timeout_s + LEASE_GRACE_S); the redelivery runs attempt 2 and records it.
      const deadline = Date.now() + 30_000;
      while (((await swarm.stub.getStatus(TENANT))?.counts.running ?? 0) > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const healthy = countingRooms();
      const r2 = await deliver(packets(swarm.swarmId, swarm.taskIds, 2), healthy.rooms, model.client, 8);

      expect(r2.explicitAcks).toHaveLength(2);
      expect(model.seen.calls).toBe(4);
      const rows = await ledgerRows(swarm.swarmId, 4);
      expect(rows.map((r) => r.call_id)).toEqual(
        swarm.taskIds.flatMap((t) => [`${swarm.swarmId}:${t}:1:1`, `${swarm.swarmId}:${t}:2:1`]).sort(),
      );
      expect(rows.reduce((sum, r) => sum + (r.total_tokens ?? 0), 0)).toBe(model.seen.tokens);
      const status = await swarm.stub.getStatus(TENANT);
      expect(status?.usage.calls).toBe(4);
      expect(status?.counts.succeeded).toBe(2);
    },
    60_000,
  );
});
