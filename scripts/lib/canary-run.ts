// The canary's run against a stack's API: price the swarm (POST /v1/swarms/estimate) and refuse
// above the caller's limit, submit it, read its status every poll until it ends, and turn the reads
// into figures (canary-figures.ts). It prints nothing itself: progress goes to `onProgress`.
import { z } from "zod";
import { createClient, type EdgeswarmClient, EdgeswarmError } from "../../src/client/index.ts";
import { type CanaryFigures, type CanarySample, toCanaryFigures } from "./canary-figures.ts";

export interface CanaryOptions {
  /** The API, e.g. https://edgeswarm.example.workers.dev (no trailing /v1). */
  url: string;
  token: string;
  tasks: number;
  /** The swarm's window (limits.concurrency). */
  concurrency: number;
  model: string;
  maxOutputTokens: number;
  /** Refuse to start when the model cost's upper estimate is above this, unless `yes`. */
  maxUsd: number;
  yes: boolean;
  pollMs: number;
  /** How often the status is read until 90% of the window is in flight (at most RAMP_READS_MAX_MS): the ramp's resolution. */
  rampPollMs: number;
  /** The swarm is cancelled when it has not ended after this long. */
  timeoutS: number;
  /** AGENT_CONCURRENCY of the stack's agent, for the capacity model. */
  agentConcurrency: number;
  /** Defaults to the global fetch (tests may pass another). */
  fetch?: typeof fetch;
  /** Aborted (Ctrl-C): the swarm is cancelled, so an interrupted canary spends no more. */
  signal?: AbortSignal;
}

export interface CanaryResult {
  swarmId: string;
  state: string;
  wallS: number;
  /** The model's cost of the swarm as the status reports it (cost_usd). */
  modelCostUsd: number;
  /** The estimate's range, USD; null when a model has no price. */
  estimateUsd: { min: number; max: number } | null;
  figures: CanaryFigures;
}

/** An expected failure, as one line; `exitCode` 2 = the command line (or the limit) refused it, 1 = the stack did. */
export class CanaryError extends Error {
  readonly exitCode: 1 | 2;
  constructor(message: string, exitCode: 1 | 2) {
    super(message);
    this.exitCode = exitCode;
  }
}

export type CanaryProgress =
  | { kind: "estimate"; usd: { min: number; max: number } | null }
  | { kind: "submitted"; swarmId: string }
  | { kind: "sample"; sample: CanarySample; state: string; tasks: number };

/** Reads at the ramp's pace stop this long after submit, whether or not the window filled. */
const RAMP_READS_MAX_MS = 10_000;
const TERMINAL = new Set(["completed", "completed_with_failures", "failed", "cancelled"]);

const BillableSchema = z.looseObject({
  queue_messages_sent: z.number(),
  do_requests: z.number(),
  do_rows_written: z.number(),
  d1_rows_written: z.number(),
});
// What the canary reads of a status; `billable` and `dispatch` are absent from stacks that predate them.
const StatusSchema = z.looseObject({
  state: z.string(),
  tasks: z.number(),
  counts: z.looseObject({
    running: z.number(),
    succeeded: z.number(),
    failed: z.number(),
    cancelled: z.number(),
    skipped_budget: z.number(),
    skipped: z.number().optional(),
  }),
  wall_s: z.number(),
  cost_usd: z.number(),
  latency_ms: z.object({ p50: z.number().nullable(), p95: z.number().nullable() }),
  billable: BillableSchema.optional(),
  dispatch: z.looseObject({ lanes: z.number(), slots: z.number(), ttfb_ms: z.number().nullable(), latency_ms: z.number().nullable() }).optional(),
});
type Status = z.infer<typeof StatusSchema>;
const EstimateSchema = z.looseObject({ cost_usd: z.object({ min: z.number(), max: z.number() }).nullable() });
const CreatedSchema = z.looseObject({ id: z.string() });

/** The canary's spec: short prompts, small answers, one attempt's worth of everything. */
export function toCanarySpec(options: Pick<CanaryOptions, "tasks" | "concurrency" | "model" | "maxOutputTokens">): Record<string, unknown> {
  return {
    name: `canary: ${options.tasks} tasks, W ${options.concurrency}`,
    model: options.model,
    system: "Answer in one word.",
    tasks: Array.from({ length: options.tasks }, (_, i) => ({ id: `canary-${String(i + 1).padStart(5, "0")}`, prompt: `Say ok (${i + 1}).` })),
    limits: { concurrency: options.concurrency, max_output_tokens: options.maxOutputTokens, timeout_s: 60 },
    metadata: { source: "npm run canary" },
  };
}

/** One line for an API failure: what the stack said, and what to do for the usual ones. */
export function toCanaryError(error: unknown, url: string): CanaryError {
  if (error instanceof CanaryError) return error;
  if (error instanceof EdgeswarmError) {
    if (error.code === "network") return new CanaryError(`${error.message} (is the stack running at ${url}? npm start prints its URL)`, 1);
    if (error.status === 401) return new CanaryError(`${url} refused the token (401 unauthorized): pass the API key of the stack with --token`, 1);
    if (error.status === 403) return new CanaryError(`${url} refused the key (403 forbidden): the canary needs a key with the run scope`, 1);
    if (error.status === 404) return new CanaryError(`${url} has no edgeswarm API there (404): pass the API's base URL, without /v1`, 1);
    return new CanaryError(`${url} answered ${error.status} ${error.code}: ${error.message}`, 1);
  }
  if (error instanceof z.ZodError)
    return new CanaryError(`${url} answered a shape the canary does not know: ${z.prettifyError(error).replaceAll("\n", " ")}`, 1);
  return new CanaryError(error instanceof Error ? error.message : String(error), 1);
}

function toSample(status: Status, atMs: number): CanarySample {
  const c = status.counts;
  return {
    atMs,
    inFlight: c.running,
    done: c.succeeded + c.failed + c.cancelled + c.skipped_budget + (c.skipped ?? 0),
    lanes: status.dispatch?.lanes ?? null,
    slots: status.dispatch?.slots ?? null,
    doRequests: status.billable?.do_requests ?? null,
    ttfbMs: status.dispatch?.ttfb_ms ?? null,
    latencyMs: status.dispatch?.latency_ms ?? null,
  };
}

/** Waits `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Throws unless the swarm's upper model-cost estimate is within --max-usd, or --yes says spend it. */
function refuseAboveLimit(costUsd: { min: number; max: number } | null, options: CanaryOptions): void {
  if (options.yes) return;
  if (costUsd === null) throw new CanaryError(`${options.model} has no price on this stack, so its cost cannot be bounded: pass --yes to run it anyway`, 2);
  if (costUsd.max > options.maxUsd) {
    throw new CanaryError(`the model cost could reach $${costUsd.max.toPrecision(3)}, above --max-usd ${options.maxUsd}: pass --yes to spend it`, 2);
  }
}

/**
 * Reads the status until the swarm ends: every rampPollMs until 90% of the window is in flight
 * (at most RAMP_READS_MAX_MS), then every pollMs. Cancels the swarm past the timeout or on abort.
 */
async function readUntilEnd(
  client: EdgeswarmClient,
  id: string,
  submittedAt: number,
  options: CanaryOptions,
  onProgress: (event: CanaryProgress) => void,
): Promise<{ status: Status; samples: CanarySample[] }> {
  const samples: CanarySample[] = [];
  const deadline = submittedAt + options.timeoutS * 1_000;
  const rampTarget = Math.ceil(Math.min(options.concurrency, options.tasks) * 0.9);
  let ramping = true;
  for (;;) {
    const readAt = performance.now();
    const status = StatusSchema.parse(await client.getSwarm(id));
    // The read's midpoint: when the room most likely answered.
    const sample = toSample(status, Math.round((readAt + performance.now()) / 2 - submittedAt));
    samples.push(sample);
    onProgress({ kind: "sample", sample, state: status.state, tasks: status.tasks });
    if (TERMINAL.has(status.state)) return { status, samples };
    const progress = `${sample.done}/${status.tasks} done`;
    if (performance.now() > deadline) {
      await client.cancel(id).catch(() => undefined);
      throw new CanaryError(`swarm ${id} still ${status.state} after ${options.timeoutS} s (${progress}): cancelled it`, 1);
    }
    ramping &&= sample.inFlight < rampTarget && sample.atMs < RAMP_READS_MAX_MS;
    await sleep(Math.max(0, (ramping ? options.rampPollMs : options.pollMs) - (performance.now() - readAt)), options.signal);
    if (options.signal?.aborted === true) {
      await client.cancel(id).catch(() => undefined);
      throw new CanaryError(`interrupted: cancelled swarm ${id} (${progress})`, 1);
    }
  }
}

export async function runCanary(options: CanaryOptions, onProgress: (event: CanaryProgress) => void = () => {}): Promise<CanaryResult> {
  const client = createClient({ baseUrl: options.url, token: options.token, ...(options.fetch === undefined ? {} : { fetch: options.fetch }) });
  try {
    const spec = toCanarySpec(options);
    const estimate = EstimateSchema.parse(await client.estimate(spec));
    onProgress({ kind: "estimate", usd: estimate.cost_usd });
    refuseAboveLimit(estimate.cost_usd, options);
    const submittedAt = performance.now();
    const { id } = CreatedSchema.parse(await client.createSwarm(spec));
    onProgress({ kind: "submitted", swarmId: id });
    const { status, samples } = await readUntilEnd(client, id, submittedAt, options, onProgress);
    return toResult(id, status, samples, estimate.cost_usd, options);
  } catch (error) {
    throw toCanaryError(error, options.url);
  }
}

function toResult(id: string, status: Status, samples: CanarySample[], estimateUsd: CanaryResult["estimateUsd"], options: CanaryOptions): CanaryResult {
  const b = status.billable;
  const figures = toCanaryFigures({
    tasks: status.tasks,
    window: options.concurrency,
    agentConcurrency: options.agentConcurrency,
    samples,
    statusReads: samples.length,
    succeeded: status.counts.succeeded,
    failed: status.counts.failed,
    latencyP50Ms: status.latency_ms.p50,
    latencyP95Ms: status.latency_ms.p95,
    billable:
      b === undefined
        ? null
        : { queueMessagesSent: b.queue_messages_sent, doRequests: b.do_requests, doRowsWritten: b.do_rows_written, d1RowsWritten: b.d1_rows_written },
  });
  return { swarmId: id, state: status.state, wallS: status.wall_s, modelCostUsd: status.cost_usd, estimateUsd, figures };
}
