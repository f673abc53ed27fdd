// A swarm started in the real SwarmRoom (the auxiliary orchestrator Worker of the agent project),
// with the status and results reads the agent tests assert on, the tickets that bring lanes to it
// (delivered by hand: the room's own tickets go to a queue nobody consumes here), and the ledger
// and mock-model counters that prove "upstream calls = ledger rows".
import type { MessageBatchMessage } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import type { StartSwarmInput, SwarmStatusWire, TaskResult } from "../../../src/core/swarm-contract.ts";
import type { Ticket } from "../../../src/core/ticket.ts";

export interface RoomSwarm {
  swarmId: string;
  tenant: string;
  stub: ReturnType<typeof env.SWARM_ROOM.get>;
  status(): Promise<SwarmStatusWire>;
  results(): Promise<TaskResult[]>;
}

/** A swarm of numbered tasks (`task-001`, …) and the ids it was given. */
export interface NumberedSwarm extends RoomSwarm {
  taskIds: string[];
}

let numbered = 0;

/**
 * Starts a swarm of `taskCount` one-line tasks for `tenant` (mock-1, window 100 unless `limits`
 * says otherwise); `label` names the test file in the swarm's id and name.
 */
export async function startNumberedSwarm(label: string, tenant: string, taskCount: number, limits: Record<string, number> = {}): Promise<NumberedSwarm> {
  numbered += 1;
  const swarmId = `sw_${label}${Date.now().toString(36)}${numbered}`;
  const taskIds = Array.from({ length: taskCount }, (_, i) => `task-${String(i + 1).padStart(3, "0")}`);
  const swarm = await startRoomSwarm({
    swarmId,
    tenant,
    spec: { name: `${label} test ${numbered}`, model: "mock-1", system: "You are a test agent.", limits: LimitsSchema.parse({ concurrency: 100, ...limits }) },
    tasks: taskIds.map((id) => ({ id, prompt: `Summarize item ${id}.` })),
    createdAt: Date.now(),
    origin: { kind: "api" },
  });
  return { ...swarm, taskIds };
}

export async function startRoomSwarm(input: StartSwarmInput): Promise<RoomSwarm> {
  const { swarmId, tenant } = input;
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toEqual({ created: true });
  return {
    swarmId,
    tenant,
    stub,
    async status() {
      const status = await stub.getStatus(tenant);
      if (status === null) throw new Error(`swarm ${swarmId} not found`);
      return status;
    },
    async results() {
      const page = await stub.getResults(tenant, null, 1_000);
      if (page === null) throw new Error(`swarm ${swarmId} not found`);
      return page.results;
    },
  };
}

let ticketCounter = 0;

/** `count` fresh tickets of a swarm, each its own message, as the room would send them. */
export function tickets(swarmId: string, count = 1, attempts = 1): MessageBatchMessage<unknown>[] {
  return Array.from({ length: count }, () => {
    ticketCounter += 1;
    const id = `tk-${Date.now().toString(36)}-${ticketCounter}`;
    return { id: `msg-${id}`, timestamp: new Date(), attempts, body: { v: 2, swarm_id: swarmId, ticket: id } satisfies Ticket };
  });
}

/** The same messages, delivered again by the queue (one more attempt). */
export function redelivered(messages: MessageBatchMessage<unknown>[]): MessageBatchMessage<unknown>[] {
  return messages.map((m) => ({ ...m, attempts: m.attempts + 1 }));
}

export const messageIds = (messages: readonly MessageBatchMessage<unknown>[]): string[] => messages.map((m) => m.id).sort();

export interface LedgerRow {
  call_id: string;
  model: string;
  task_id: string;
  attempt: number;
  turn: number;
  status: string;
  error_class: string | null;
  prompt_tokens: number | null;
  total_tokens: number | null;
}

/** The swarm's ledger rows once `count` of them are flushed (the SwarmRoom flushes ~50 ms after recording). */
export async function ledgerRows(swarmId: string, count: number): Promise<LedgerRow[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { results } = await env.LEDGER_DB.prepare(
      "SELECT call_id, model, task_id, attempt, turn, status, error_class, prompt_tokens, total_tokens FROM ledger WHERE swarm_id = ? ORDER BY call_id",
    )
      .bind(swarmId)
      .all<LedgerRow>();
    if (results.length >= count || Date.now() > deadline) return results;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export interface MockStats {
  calls: number;
  total_tokens: number;
}

/** The mock model's counters (every request it answered, and the tokens it reported). */
export async function mockStats(): Promise<MockStats> {
  const response = await fetch(`${env.MOCK_MODEL_URL}/stats`);
  const body: unknown = await response.json();
  if (typeof body !== "object" || body === null || !("calls" in body) || !("total_tokens" in body)) throw new Error("unexpected /stats body");
  const { calls, total_tokens } = body;
  if (typeof calls !== "number" || typeof total_tokens !== "number") throw new Error("unexpected /stats body");
  return { calls, total_tokens };
}

/** Polls `check` every 100 ms until it holds or `withinMs` passes; returns whether it held. */
export async function waitFor(check: () => Promise<boolean>, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** consumeTasks settings as the agent's wrangler.toml sets them (the deps a test adds: rooms, gateway, tools). */
export const LANE_DEFAULTS = {
  concurrency: 128,
  headerSlots: 6,
  pullForMs: 300_000,
  callsWithinMs: 840_000,
  maxTasks: 10_000,
  idleWaitMaxMs: 2_000,
} as const;
