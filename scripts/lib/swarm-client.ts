// The scripts' and e2e tests' use of the API, on the typed client (edgeswarm/client): submit a spec,
// wait for the swarm to end, read results. Responses are parsed here, not cast: a contract drift
// fails with the path that changed. Waiting polls the status rather than watching the live events,
// so a benchmark's figures (rows written by the room) are those of a swarm nobody watches.
import { z } from "zod";
import { createClient, EdgeswarmError, type EdgeswarmClient } from "../../src/client/index.ts";

export { formatSummary } from "../../src/client/index.ts";

const CountsSchema = z.looseObject({
  queued: z.number(),
  running: z.number(),
  succeeded: z.number(),
  failed: z.number(),
  cancelled: z.number(),
  skipped_budget: z.number(),
  skipped: z.number(),
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

const SubmitResponseSchema = z.looseObject({ id: z.string(), urls: z.record(z.string(), z.string()) });
const TERMINAL = new Set(["completed", "completed_with_failures", "failed", "cancelled"]);

/** The API refused: its status and body, as the scripts print them. */
export class ApiCallError extends Error {
  readonly status: number;
  readonly body: string;
  constructor(status: number, body: string, what: string) {
    super(`${what} answered ${status}: ${body}`);
    this.status = status;
    this.body = body;
  }
}

/**
 * A local stack compresses JSON answers itself when the client accepts gzip or br: miniflare's entry
 * Worker does what Cloudflare's edge does for visitors ("Cloudflare supports Gzip, Brotli, and
 * Zstandard compression when delivering content to website visitors",
 * developers.cloudflare.com/speed/optimization/content/compression/), and the deflate runs on the
 * orchestrator's workerd thread, beside every SwarmRoom: a third of an ended swarm's status read
 * there (14.5 ms of workerd CPU a read with gzip, 9.5 ms without; `npm run bench`, 1,000 tasks,
 * `perf`). In production the edge compresses, not the Worker. Over loopback nothing needs it, so the
 * scripts ask a local stack for the answer as it is.
 */
export function isLoopbackUrl(baseUrl: string): boolean {
  const host = new URL(baseUrl).hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

const uncompressedFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set("accept-encoding", "identity");
  return fetch(input, { ...init, headers });
};

const clientOf = (baseUrl: string, token: string): EdgeswarmClient =>
  createClient({ baseUrl, token, ...(isLoopbackUrl(baseUrl) ? { fetch: uncompressedFetch } : {}) });

async function withCallError<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof EdgeswarmError && error.status !== 0) {
      throw new ApiCallError(error.status, JSON.stringify({ error: { code: error.code, message: error.message, details: error.details } }), what);
    }
    // Unreachable: a TypeError, as fetch throws it, so callers can say "is the stack running?".
    if (error instanceof EdgeswarmError) throw new TypeError(error.message);
    throw error;
  }
}

export async function submitSwarm(baseUrl: string, token: string, spec: unknown): Promise<{ id: string; urls: Record<string, string> }> {
  const created = await withCallError("POST /v1/swarms", () => clientOf(baseUrl, token).createSwarm(spec as Record<string, unknown>));
  return SubmitResponseSchema.parse(created);
}

export async function getSwarm(baseUrl: string, token: string, id: string): Promise<SwarmStatusBody> {
  return SwarmStatusBodySchema.parse(await withCallError(`GET /v1/swarms/${id}`, () => clientOf(baseUrl, token).getSwarm(id)));
}

/** `GET /v1/swarms/:id` with If-None-Match `etag`: whether the status changed, and its current tag (null while the swarm runs). */
export async function getSwarmIfChanged(baseUrl: string, token: string, id: string, etag: string | null): Promise<{ changed: boolean; etag: string | null }> {
  const read = await withCallError(`GET /v1/swarms/${id}`, () => clientOf(baseUrl, token).getSwarmIfChanged(id, etag));
  return { changed: read.changed, etag: read.etag };
}

/** Any GET of the API, as JSON (the caller validates what it uses). */
export async function getJson(baseUrl: string, token: string, path: string): Promise<unknown> {
  const response = await (isLoopbackUrl(baseUrl) ? uncompressedFetch : fetch)(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  if (!response.ok) throw new ApiCallError(response.status, text, `GET ${path}`);
  return text === "" ? null : JSON.parse(text);
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
  await withCallError("GET results", async () => {
    for await (const result of clientOf(baseUrl, token).results(id)) all.push(result as unknown as Record<string, unknown>);
  });
  return all;
}
