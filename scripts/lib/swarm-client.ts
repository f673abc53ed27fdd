// A small HTTP client of the edgeswarm API for the CLI scripts and e2e tests: submit a spec,
// wait for the swarm to end, and format the one-line summary users know from benchmark scripts.
// Responses are parsed, not cast: a contract drift fails here with the path that changed.
import { z } from "zod";

const CountsSchema = z.looseObject({
  queued: z.number(),
  running: z.number(),
  succeeded: z.number(),
  failed: z.number(),
  cancelled: z.number(),
  skipped_budget: z.number(),
});

export const SwarmStatusBodySchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  state: z.string(),
  tasks: z.number(),
  counts: CountsSchema,
  usage: z.looseObject({ calls: z.number(), total_tokens: z.number() }),
  tool_calls: z.number().optional(),
  cost_usd: z.number(),
  wall_s: z.number(),
  latency_ms: z.object({ p50: z.number().nullable(), p95: z.number().nullable() }),
});
export type SwarmStatusBody = z.infer<typeof SwarmStatusBodySchema>;
export type SwarmSummaryInput = Pick<SwarmStatusBody, "tasks" | "counts" | "usage" | "cost_usd" | "wall_s" | "latency_ms">;

const SubmitResponseSchema = z.looseObject({ id: z.string(), urls: z.record(z.string(), z.string()) });
const ResultsPageSchema = z.object({ results: z.array(z.record(z.string(), z.unknown())), next_cursor: z.string().nullable() });

const TERMINAL = new Set(["completed", "completed_with_failures", "failed", "cancelled"]);

export class ApiCallError extends Error {
  readonly status: number;
  readonly body: string;
  constructor(status: number, body: string, what: string) {
    super(`${what} answered ${status}: ${body}`);
    this.status = status;
    this.body = body;
  }
}

async function call(url: string, token: string, init: RequestInit, what: string): Promise<unknown> {
  const response = await fetch(url, {
    ...init,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...init.headers },
  });
  const text = await response.text();
  if (!response.ok) throw new ApiCallError(response.status, text, what);
  return text === "" ? null : JSON.parse(text);
}

export async function submitSwarm(baseUrl: string, token: string, spec: unknown): Promise<{ id: string; urls: Record<string, string> }> {
  const body = await call(`${baseUrl}/v1/swarms`, token, { method: "POST", body: JSON.stringify(spec) }, "POST /v1/swarms");
  return SubmitResponseSchema.parse(body);
}

export async function getSwarm(baseUrl: string, token: string, id: string): Promise<SwarmStatusBody> {
  return SwarmStatusBodySchema.parse(await call(`${baseUrl}/v1/swarms/${id}`, token, { method: "GET" }, `GET /v1/swarms/${id}`));
}

/** Any GET of the API, as JSON (the caller validates what it uses). */
export async function getJson(baseUrl: string, token: string, path: string): Promise<unknown> {
  return call(`${baseUrl}${path}`, token, { method: "GET" }, `GET ${path}`);
}

/** Polls until the swarm ends (or the timeout passes, which throws). */
export async function waitForSwarm(
  baseUrl: string,
  token: string,
  id: string,
  options: { timeoutMs: number; pollMs?: number; onProgress?: (status: SwarmStatusBody) => void },
): Promise<SwarmStatusBody> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const status = await getSwarm(baseUrl, token, id);
    options.onProgress?.(status);
    if (TERMINAL.has(status.state)) return status;
    if (Date.now() > deadline) throw new Error(`swarm ${id} still ${status.state} after ${options.timeoutMs / 1000} s: ${JSON.stringify(status.counts)}`);
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
  }
}

/** Every result of a swarm, following the cursor. */
export async function getAllResults(baseUrl: string, token: string, id: string): Promise<Record<string, unknown>[]> {
  const all: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? "?limit=1000" : `?limit=1000&cursor=${encodeURIComponent(cursor)}`;
    const page = ResultsPageSchema.parse(await call(`${baseUrl}/v1/swarms/${id}/results${query}`, token, { method: "GET" }, "GET results"));
    all.push(...page.results);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return all;
}

/** `n=100 ok=100 err=0 wall=3.21 s throughput=31.2 req/s p50=212 ms p95=260 ms tokens=4800 cost=$0.000123` */
export function formatSummary(status: SwarmSummaryInput): string {
  const { counts } = status;
  const err = counts.failed + counts.cancelled + counts.skipped_budget;
  const throughput = status.wall_s > 0 ? status.tasks / status.wall_s : 0;
  const ms = (v: number | null) => (v === null ? "n/a" : `${Math.round(v)}`);
  return [
    `n=${status.tasks}`,
    `ok=${counts.succeeded}`,
    `err=${err}`,
    `wall=${status.wall_s.toFixed(2)} s`,
    `throughput=${throughput.toFixed(1)} req/s`,
    `p50=${ms(status.latency_ms.p50)} ms`,
    `p95=${ms(status.latency_ms.p95)} ms`,
    `tokens=${status.usage.total_tokens}`,
    `cost=$${status.cost_usd.toFixed(6)}`,
  ].join(" ");
}
