// End to end across both Workers, as `npm start` runs them: real `wrangler dev` (orchestrator +
// agent in one workerd, local Queue, Durable Objects and D1) against the mock model over HTTP.
import { rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ROOT, generateToken, queryLocalD1, startStack, type Stack } from "../../scripts/lib/local-stack.ts";
import { getAllResults, submitSwarm, waitForSwarm } from "../../scripts/lib/swarm-client.ts";

const persistTo = path.join(ROOT, ".tmp", "e2e-state");
let stack: Stack;

const queryLedger = (sql: string): unknown[] => queryLocalD1(persistTo, sql);

async function until<T>(what: string, probe: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

beforeAll(async () => {
  await rm(persistTo, { recursive: true, force: true });
  stack = await startStack({ port: 0, apiToken: generateToken(), mock: { latency: 30 }, persistTo, log: "capture" });
});

afterAll(async () => {
  await stack?.stop();
});

describe("the local stack", () => {
  it("refuses a request without a token and names the bad field of an invalid spec", async () => {
    const noToken = await fetch(`${stack.url}/v1/swarms`);
    expect(noToken.status).toBe(401);
    expect(await noToken.json()).toMatchObject({ error: { code: "unauthorized" } });

    const invalid = await fetch(`${stack.url}/v1/swarms`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "x", model: "mock-1", tasks: [{ prompt: "" }], limits: { concurrency: 0 } }),
    });
    expect(invalid.status).toBe(400);
    const body = z.object({ error: z.object({ code: z.string(), details: z.array(z.object({ path: z.string() })) }) }).parse(await invalid.json());
    expect(body.error.code).toBe("invalid_spec");
    expect(body.error.details.map((d) => d.path)).toEqual(expect.arrayContaining(["tasks.0.prompt", "limits.concurrency"]));
  });

  it("runs a 24-task swarm across both Workers: every task terminal, ledger rows = model calls = upstream calls", async () => {
    const before = stack.mock?.stats();
    const { id } = await submitSwarm(stack.url, stack.token, {
      name: "e2e",
      model: "mock-1",
      system: "You are a test agent.",
      tasks: Array.from({ length: 24 }, (_, i) => ({ id: `file-${i + 1}.ts`, prompt: `Review file-${i + 1}.ts` })),
      limits: { concurrency: 8, max_output_tokens: 48, timeout_s: 20, max_attempts: 3 },
    });
    const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 120_000 });
    expect(status.state).toBe("completed");
    expect(status.counts).toMatchObject({ succeeded: 24, failed: 0, queued: 0, running: 0 });

    const results = await getAllResults(stack.url, stack.token, id);
    expect(results.map((r) => r.task_id)).toEqual(Array.from({ length: 24 }, (_, i) => `file-${i + 1}.ts`));
    for (const result of results) {
      expect(result).toMatchObject({ state: "succeeded", attempts: 1, error: null });
      expect(String(result.output)).toContain("[mock]");
    }

    const after = stack.mock?.stats();
    const upstreamCalls = (after?.calls ?? 0) - (before?.calls ?? 0);
    const upstreamTokens = (after?.total_tokens ?? 0) - (before?.total_tokens ?? 0);
    expect(upstreamCalls).toBe(24);
    // Windowed dispatch: the upstream never saw more than W calls at once.
    expect(after?.max_in_flight).toBeLessThanOrEqual(8);
    expect(status.usage).toMatchObject({ calls: 24, total_tokens: upstreamTokens });

    const ledger = await until(
      "ledger rows in D1",
      () => z.array(z.object({ n: z.number(), tokens: z.number().nullable() })).parse(
        queryLedger(`SELECT COUNT(*) AS n, SUM(total_tokens) AS tokens FROM ledger WHERE swarm_id = '${id}'`),
      )[0],
      (row) => row?.n === 24,
    );
    expect(ledger).toEqual({ n: upstreamCalls, tokens: upstreamTokens });
  });
});
