// Ledger cost = Σ usage × price, exactly, for every vendor usage shape the mock model speaks: real
// SwarmRoom, agent queue handler, mock model over loopback, the local D1 ledger (issue 4).
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import type { MessageBatchMessage, QueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { DEFAULT_PRICES } from "../../../src/core/pricing.ts";
import { LimitsSchema } from "../../../src/core/spec-schema.ts";
import type { StartSwarmInput } from "../../../src/core/swarm-contract.ts";
import worker from "../index.ts";

const TENANT = "tk_ledger_cost_test";
const MODEL = "deepseek-v3.2";
const TASK_COUNT = 5;
let counter = 0;

type Shape = "openai" | "deepseek" | "kimi" | "anthropic" | "gemini" | "vllm" | "ollama";

/** Each shape, and whether its wire usage carries a cached-tokens field. */
const SHAPES: { shape: Shape; cachedField: boolean }[] = [
  { shape: "openai", cachedField: true },
  { shape: "deepseek", cachedField: true },
  { shape: "kimi", cachedField: true },
  { shape: "anthropic", cachedField: true },
  { shape: "gemini", cachedField: false },
  { shape: "vllm", cachedField: false },
  { shape: "ollama", cachedField: false },
];

const TokenCountsSchema = z.object({
  calls: z.number().int().nonnegative(),
  usage_reports: z.number().int().nonnegative(),
  prompt_tokens: z.number().int().nonnegative(),
  cached_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  reasoning_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
});
type TokenCounts = z.infer<typeof TokenCountsSchema>;
const StatsSchema = z.object({ by_model: z.record(z.string(), TokenCountsSchema) });

const LedgerRowSchema = z.object({
  call_id: z.string(),
  model: z.string(),
  status: z.string(),
  prompt_tokens: z.number().int(),
  cached_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  reasoning_tokens: z.number().int(),
  total_tokens: z.number().int(),
  cost_usd: z.number(),
});
type LedgerRow = z.infer<typeof LedgerRowSchema>;

async function postMock(path: string, body?: unknown): Promise<void> {
  const response = await fetch(`${env.MOCK_MODEL_URL}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body === undefined ? "" : JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  await response.body?.cancel();
}

/** The mock's normalized counts for MODEL since the last reset (zeros when it saw no call). */
async function mockCounts(): Promise<TokenCounts> {
  const response = await fetch(`${env.MOCK_MODEL_URL}/stats`);
  const stats = StatsSchema.parse(await response.json());
  return (
    stats.by_model[MODEL] ?? {
      calls: 0,
      usage_reports: 0,
      prompt_tokens: 0,
      cached_tokens: 0,
      completion_tokens: 0,
      reasoning_tokens: 0,
      total_tokens: 0,
    }
  );
}

/** Starts a swarm of TASK_COUNT tasks on MODEL, with prompts no other swarm uses. */
async function startSwarm(shape: Shape): Promise<{ swarmId: string; taskIds: string[] }> {
  counter += 1;
  const swarmId = `sw_cost${Date.now().toString(36)}${counter}`;
  const taskIds = Array.from({ length: TASK_COUNT }, (_, i) => `task-${i + 1}`);
  const input: StartSwarmInput = {
    swarmId,
    tenant: TENANT,
    spec: { name: `ledger cost ${shape}`, model: MODEL, system: "You are a test agent.", limits: LimitsSchema.parse({ concurrency: 100 }) },
    tasks: taskIds.map((id, i) => ({ id, prompt: `Summarize item ${id} of swarm ${swarmId} (${shape} usage)${" in detail".repeat(i)}.` })),
    createdAt: Date.now(),
    origin: { kind: "api" },
  };
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toEqual({ created: true });
  return { swarmId, taskIds };
}

async function deliver(swarmId: string, taskIds: string[]): Promise<{ messageIds: string[]; result: QueueResult }> {
  const messages: MessageBatchMessage<unknown>[] = taskIds.map((taskId) => ({
    id: `${swarmId}-${taskId}`,
    timestamp: new Date(),
    attempts: 1,
    body: { v: 1, swarm_id: swarmId, task_ids: [taskId] },
  }));
  const batch = createMessageBatch("edgeswarm-tasks", messages);
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  return { messageIds: messages.map((m) => m.id), result: await getQueueResult(batch, ctx) };
}

/** The swarm's ledger rows once `count` of them are flushed (the SwarmRoom flushes ~50 ms after recording). */
async function ledgerRows(swarmId: string, count: number): Promise<LedgerRow[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { results } = await env.LEDGER_DB.prepare(
      "SELECT call_id, model, status, prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, total_tokens, cost_usd FROM ledger WHERE swarm_id = ? ORDER BY call_id",
    )
      .bind(swarmId)
      .all();
    if (results.length >= count || Date.now() > deadline) return z.array(LedgerRowSchema).parse(results);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const sum = (rows: LedgerRow[], field: keyof Omit<LedgerRow, "call_id" | "model" | "status">): number => rows.reduce((total, row) => total + row[field], 0);

afterEach(async () => {
  await postMock("/admin/scenario", {});
});

describe("ledger cost by vendor usage shape", () => {
  it.each(SHAPES)("$shape: ledger tokens = the mock's normalized counts, cost = Σ usage × price", async ({ shape, cachedField }) => {
    await postMock("/admin/scenario", { usage_shape: shape, cached_share: 0.5, latency: 0 });
    await postMock("/stats/reset");
    const { swarmId, taskIds } = await startSwarm(shape);

    const { messageIds, result } = await deliver(swarmId, taskIds);

    expect(result.explicitAcks.sort()).toEqual([...messageIds].sort());
    expect(result.retryMessages).toEqual([]);
    const mock = await mockCounts();
    expect(mock.calls).toBe(TASK_COUNT);
    expect(mock.usage_reports).toBe(mock.calls);

    const rows = await ledgerRows(swarmId, mock.calls);
    expect(rows).toHaveLength(mock.calls);
    expect(rows.map((r) => r.call_id)).toEqual(taskIds.map((t) => `${swarmId}:${t}:1:1`).sort());
    for (const row of rows) expect([row.model, row.status]).toEqual([MODEL, "ok"]);

    expect({
      prompt_tokens: sum(rows, "prompt_tokens"),
      cached_tokens: sum(rows, "cached_tokens"),
      completion_tokens: sum(rows, "completion_tokens"),
      reasoning_tokens: sum(rows, "reasoning_tokens"),
      total_tokens: sum(rows, "total_tokens"),
    }).toEqual({
      prompt_tokens: mock.prompt_tokens,
      cached_tokens: mock.cached_tokens,
      completion_tokens: mock.completion_tokens,
      reasoning_tokens: mock.reasoning_tokens,
      total_tokens: mock.total_tokens,
    });

    const price = DEFAULT_PRICES[MODEL];
    if (price === undefined) throw new Error(`no default price for ${MODEL}`);
    const expectedCost =
      ((mock.prompt_tokens - mock.cached_tokens) * price.input + mock.cached_tokens * price.cached_input + mock.completion_tokens * price.output) / 1e6;
    expect(expectedCost).toBeGreaterThan(0);
    expect(Math.abs(sum(rows, "cost_usd") - expectedCost)).toBeLessThanOrEqual(1e-12);

    if (cachedField) expect(mock.cached_tokens).toBeGreaterThan(0);
    else expect(mock.cached_tokens).toBe(0);
    expect(sum(rows, "cached_tokens")).toBe(mock.cached_tokens);
  });
});
