// The agent through a gateway config end to end: real KeyPool and SwarmRoom Durable Objects (the
// auxiliary orchestrator Worker), the mock model over loopback, the local D1 ledger. Each test uses
// key ids and API key values of its own, so KeyPool state and the mock's per-key counts are its own.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { MessageBatchMessage, QueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { parseGatewayConfig } from "../../../src/core/env-settings.ts";
import type { KeyPoolStatus } from "../../../src/core/key-pool-contract.ts";
import { orderKeys } from "../../../src/core/order-keys.ts";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import type { StartSwarmInput, TaskResult } from "../../../src/core/swarm-contract.ts";
import { createModelClient } from "../../../src/model/model-client.ts";
import type { ModelClient } from "../../../src/model/model-client.ts";
import { consumeTasks } from "../consume-tasks.ts";
import worker from "../index.ts";
import { toKeyPools } from "../key-pools.ts";
import { toSwarmRooms } from "../swarm-rooms.ts";
import { LANE_DEFAULTS, tickets } from "./room-swarm.ts";

const TENANT = "tk_gateway_test";
const GATEWAY_MODEL = "gw-model";
let counter = 0;

/** Key ids and API key values no other test uses. */
function freshKeys(): { a: string; b: string; values: Record<string, string> } {
  counter += 1;
  const run = `${Date.now().toString(36)}${counter}`;
  const a = `gw-a-${run}`;
  const b = `gw-b-${run}`;
  return { a, b, values: { [a]: `sk-test-${a}`, [b]: `sk-test-${b}` } };
}

function gatewayConfig(keys: { id: string; rpm?: number }[]): string {
  return JSON.stringify({
    upstreams: { mock: { base_url: `${env.MOCK_MODEL_URL}/v1`, keys } },
    models: { [GATEWAY_MODEL]: { upstream: "mock", id: "mock-1" } },
  });
}

async function startSwarm(swarmId: string, taskIds: string[]): Promise<{ results(): Promise<TaskResult[]> }> {
  const input: StartSwarmInput = {
    swarmId,
    tenant: TENANT,
    spec: { name: swarmId, model: GATEWAY_MODEL, system: "You are a test agent.", limits: LimitsSchema.parse({ concurrency: 100 }) },
    tasks: taskIds.map((id) => ({ id, prompt: `Summarize item ${id}.` })),
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toEqual({ created: true });
  return {
    async results() {
      const page = await stub.getResults(TENANT, null, 1_000);
      if (page === null) throw new Error(`swarm ${swarmId} not found`);
      return page.results;
    },
  };
}

function newSwarmId(): string {
  counter += 1;
  return `sw_gw${Date.now().toString(36)}${counter}`;
}

async function deliver(messages: MessageBatchMessage<unknown>[], overrides: Partial<Env>): Promise<QueueResult> {
  const batch = createMessageBatch("edgeswarm-tasks", messages);
  const ctx = createExecutionContext();
  await worker.queue(batch, { ...env, ...overrides }, ctx);
  return getQueueResult(batch, ctx);
}

function keyPoolStatus(keyId: string): Promise<KeyPoolStatus> {
  return env.KEY_POOL.get(env.KEY_POOL.idFromName(keyId)).status();
}

/** The mock's calls and total tokens for one API key (it keys them by a hash of the key). */
async function mockCountsFor(apiKey: string): Promise<{ calls: number; total_tokens: number }> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(apiKey)));
  const keyId = `key_${[...digest]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("")
    .slice(0, 12)}`;
  const body: unknown = await (await fetch(`${env.MOCK_MODEL_URL}/stats`)).json();
  if (typeof body !== "object" || body === null || !("by_key" in body) || typeof body.by_key !== "object" || body.by_key === null) {
    throw new Error("unexpected /stats body");
  }
  const entry: unknown = Object.entries(body.by_key).find(([id]) => id === keyId)?.[1];
  if (entry === undefined) return { calls: 0, total_tokens: 0 };
  if (typeof entry !== "object" || entry === null || !("calls" in entry) || !("total_tokens" in entry)) throw new Error("unexpected by_key entry");
  const { calls, total_tokens } = entry;
  if (typeof calls !== "number" || typeof total_tokens !== "number") throw new Error("unexpected by_key entry");
  return { calls, total_tokens };
}

async function ledgerModels(swarmId: string, count: number): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { results } = await env.LEDGER_DB.prepare("SELECT model FROM ledger WHERE swarm_id = ?").bind(swarmId).all<{ model: string }>();
    if (results.length >= count || Date.now() > deadline) return results.map((r) => r.model);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("agent queue consumer through a gateway, with the real KeyPool", () => {
  it("spreads a batch over two keys with permits, calls the upstream id, records the gateway name, and leaves each KeyPool with what the upstream counted", async () => {
    const keys = freshKeys();
    const swarmId = newSwarmId();
    const taskIds = Array.from({ length: 12 }, (_, i) => `task-${i + 1}`);
    const swarm = await startSwarm(swarmId, taskIds);
    const result = await deliver(tickets(swarmId, 3), {
      GATEWAY_CONFIG: gatewayConfig([
        { id: keys.a, rpm: 300 },
        { id: keys.b, rpm: 300 },
      ]),
      UPSTREAM_KEYS: JSON.stringify(keys.values),
    });

    expect(result.explicitAcks).toHaveLength(3);
    expect(result.retryMessages).toEqual([]);
    expect((await swarm.results()).map((r) => r.state)).toEqual(Array(12).fill("succeeded"));
    expect(await ledgerModels(swarmId, 12)).toEqual(Array(12).fill(GATEWAY_MODEL));

    const [statusA, statusB] = await Promise.all([keyPoolStatus(keys.a), keyPoolStatus(keys.b)]);
    const [mockA, mockB] = await Promise.all([mockCountsFor(keys.values[keys.a] ?? ""), mockCountsFor(keys.values[keys.b] ?? "")]);
    // No key was short of permits, so the first key each task asks (a hash of swarm and task id) is where it ran.
    const firstKeys = taskIds.map((t) => orderKeys([keys.a, keys.b], swarmId, t, 1)[0]);
    expect(mockA.calls).toBe(firstKeys.filter((k) => k === keys.a).length);
    expect(mockB.calls).toBe(firstKeys.filter((k) => k === keys.b).length);
    expect(mockA.calls + mockB.calls).toBe(12);
    // Every permit released, each settled to the tokens the upstream reported for its call.
    expect(statusA).toMatchObject({ inFlight: 0, requestsLastMinute: mockA.calls, tokensLastMinute: mockA.total_tokens, quarantined: null });
    expect(statusB).toMatchObject({ inFlight: 0, requestsLastMinute: mockB.calls, tokensLastMinute: mockB.total_tokens, quarantined: null });
  });

  it("hands back the tasks beyond a key's rpm as deferred, with no call: they wait in the room, their attempts not counted", async () => {
    const keys = freshKeys();
    const swarmId = newSwarmId();
    const taskIds = Array.from({ length: 5 }, (_, i) => `task-${i + 1}`);
    const swarm = await startSwarm(swarmId, taskIds);
    const result = await deliver(tickets(swarmId, 1), {
      GATEWAY_CONFIG: gatewayConfig([{ id: keys.a, rpm: 2 }]),
      UPSTREAM_KEYS: JSON.stringify(keys.values),
      PERMIT_WAIT_MAX_S: "0",
      AGENT_CONCURRENCY: "1",
    });

    expect((await mockCountsFor(keys.values[keys.a] ?? "")).calls).toBe(2);
    // The retries are the room's (its next lane takes them when the key has room): the ticket is acked.
    expect(result.explicitAcks).toHaveLength(1);
    expect(result.retryMessages).toEqual([]);
    const results = await swarm.results();
    expect(results.filter((r) => r.state === "succeeded")).toHaveLength(2);
    const handedBack = results.filter((r) => r.state !== "succeeded");
    // Each waits to be handed out again; its deferred attempt made no call, so none is in the ledger
    // (and it gives its place in max_attempts back).
    expect(handedBack.map((r) => [r.state, r.usage.calls])).toEqual(Array(3).fill(["retry_wait", 0]));
    expect(await keyPoolStatus(keys.a)).toMatchObject({ inFlight: 0, requestsLastMinute: 2 });
  });

  it("quarantines a key the upstream rejects: the task that met the 401 fails as auth, every later call of the batch goes to the other key", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const keys = freshKeys();
    const swarmId = newSwarmId();
    // The first task asks the rejected key first; the rest are any tasks.
    const rejectedFirst = Array.from({ length: 40 }, (_, i) => `task-${i + 1}`).find((t) => orderKeys([keys.a, keys.b], swarmId, t, 1)[0] === keys.a);
    if (rejectedFirst === undefined) throw new Error("no task starts on key a");
    const taskIds = [rejectedFirst, ...["x1", "x2", "x3", "x4", "x5"]];
    const swarm = await startSwarm(swarmId, taskIds);

    const config = parseGatewayConfig(
      gatewayConfig([
        { id: keys.a, rpm: 1_000 },
        { id: keys.b, rpm: 1_000 },
      ]),
      "http://unused.invalid",
    );
    if (!config.ok) throw new Error(config.error);
    const real = createModelClient({ baseURL: `${env.MOCK_MODEL_URL}/v1`, apiKey: keys.values[keys.b] ?? "" });
    const rejecting: ModelClient = {
      complete: async () => ({
        ok: false,
        error: { class: "auth", retryable: false, retryAfterMs: null, message: "401 Incorrect API key provided (fake upstream)" },
        usage: null,
        latencyMs: 1,
        startedAt: Date.now(),
      }),
    };
    const batch = createMessageBatch("edgeswarm-tasks", tickets(swarmId, 1));
    const ctx = createExecutionContext();
    await consumeTasks(batch, {
      rooms: toSwarmRooms(env.SWARM_ROOM),
      gateway: { config: config.value, clientFor: (keyId) => (keyId === keys.a ? rejecting : real), keyPools: toKeyPools(env.KEY_POOL), permitWaitMaxMs: 0 },
      ...LANE_DEFAULTS,
      concurrency: 1,
      idleWaitMaxMs: 0,
    });
    const result = await getQueueResult(batch, ctx);

    expect(result.explicitAcks).toHaveLength(1);
    const byTask = new Map((await swarm.results()).map((r) => [r.task_id, r]));
    expect(byTask.get(rejectedFirst)).toMatchObject({ state: "failed", error: { class: "auth" } });
    expect(taskIds.slice(1).map((t) => byTask.get(t)?.state)).toEqual(Array(5).fill("succeeded"));
    expect((await keyPoolStatus(keys.a)).quarantined).not.toBeNull();
    expect(await keyPoolStatus(keys.b)).toMatchObject({ inFlight: 0, requestsLastMinute: 5, quarantined: null });
  });
});
