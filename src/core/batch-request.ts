// POST /v1/batches: the request, the edgeswarm settings its metadata may carry, the swarm spec a
// batch runs as, and the Batch object (OpenAI's shape) a batch is shown as. No I/O.
import { z } from "zod";
import { BATCH_ID_KEY } from "./batch-parts.ts";
import { BATCH_ENDPOINT, type BatchLineError } from "./batch-line.ts";
import type { ErrorDetail } from "./errors.ts";
import { err, ok, type Result } from "./result.ts";
import { ModelChoiceSchema, SwarmSpecSchema, type ModelChoice, type SwarmSpec } from "./spec-schema.ts";
import type { UsageTotals } from "./swarm-contract.ts";

export const COMPLETION_WINDOW_MS = 24 * 3_600_000;
/** Metadata keys that steer the engine; the rest is the user's own. */
export const MODEL_KEY = "edgeswarm.model";
export const MAX_USD_KEY = "edgeswarm.max_usd";
export const SWARM_ID_KEY = "edgeswarm.swarm_id";

/** OpenAI's metadata: at most 16 keys of ≤ 64 characters, string values of ≤ 512. */
export const BatchMetadataSchema = z
  .record(z.string().max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 16, "metadata holds at most 16 keys");

export const BatchCreateSchema = z.strictObject({
  input_file_id: z.string().min(1).max(100),
  endpoint: z.literal(BATCH_ENDPOINT, `endpoint must be ${BATCH_ENDPOINT} (the one endpoint batches run here)`),
  completion_window: z.literal("24h", 'completion_window must be "24h"'),
  metadata: BatchMetadataSchema.nullable().optional(),
});
export type BatchCreate = z.infer<typeof BatchCreateSchema>;

export interface BatchOverrides {
  /** Replaces every line's model (a name, or a mix written as JSON). */
  model: ModelChoice | null;
  maxUsd: number | null;
}

/** `metadata["edgeswarm.model"]` and `metadata["edgeswarm.max_usd"]`, checked; errors name the key. */
export function readBatchOverrides(metadata: Readonly<Record<string, string>>): Result<BatchOverrides, ErrorDetail[]> {
  const problems: ErrorDetail[] = [];
  let model: ModelChoice | null = null;
  const rawModel = metadata[MODEL_KEY];
  if (rawModel !== undefined) {
    const value = rawModel.trim().startsWith("[") ? parseJson(rawModel) : rawModel;
    const parsed = ModelChoiceSchema.safeParse(value);
    if (parsed.success) model = parsed.data;
    else problems.push({ path: `metadata.${MODEL_KEY}`, message: 'a model name, or a mix as JSON: [{"model": …, "weight": …}]' });
  }
  let maxUsd: number | null = null;
  const rawUsd = metadata[MAX_USD_KEY];
  if (rawUsd !== undefined) {
    const usd = /^\d+(\.\d+)?$/.test(rawUsd.trim()) ? Number(rawUsd) : Number.NaN;
    if (Number.isFinite(usd) && usd > 0 && usd <= 1_000_000) maxUsd = usd;
    else problems.push({ path: `metadata.${MAX_USD_KEY}`, message: 'a positive number of US dollars, as a string ("12.5")' });
  }
  if (metadata[SWARM_ID_KEY] !== undefined) problems.push({ path: `metadata.${SWARM_ID_KEY}`, message: "set by edgeswarm, not by the caller" });
  return problems.length > 0 ? err(problems) : ok({ model, maxUsd });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The batch a swarm runs, from its stored metadata (JSON text, as the D1 index keeps it); null for a plain swarm. */
export function readBatchIdOf(metadata: string | null): string | null {
  if (metadata === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(metadata);
  } catch {
    return null;
  }
  const read = BatchIdMetadataSchema.safeParse(parsed);
  return read.success ? read.data[BATCH_ID_KEY] : null;
}

const BatchIdMetadataSchema = z.looseObject({ [BATCH_ID_KEY]: z.string() });

/** The swarm a batch runs as: its tasks are the lines, their bodies passed through. */
export function toBatchSpec(input: { batchId: string; model: ModelChoice; maxUsd: number | null; maxOutputTokens: number }): Omit<SwarmSpec, "tasks"> {
  const { tasks: _tasks, ...spec } = SwarmSpecSchema.parse({
    name: `batch ${input.batchId}`,
    model: input.model,
    tasks: [{ prompt: "-" }],
    limits: { max_output_tokens: input.maxOutputTokens },
    ...(input.maxUsd === null ? {} : { budget: { max_usd: input.maxUsd } }),
    metadata: { [BATCH_ID_KEY]: input.batchId },
  });
  return spec;
}

const BatchLineErrorsSchema = z.array(z.object({ code: z.string(), message: z.string(), line: z.number().int(), param: z.string().nullable() }));

/** What the Batch object needs of a batch's stored row (D1 `batches`). */
export interface BatchRecord {
  id: string;
  input_file_id: string;
  endpoint: string;
  completion_window: string;
  metadata: string | null;
  swarm_id: string | null;
  status: string;
  errors: string | null;
  output_file_id: string | null;
  error_file_id: string | null;
  total: number;
  completed: number;
  failed: number;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
}

/** What the batch's swarm says now (its counts while it runs; its usage, the ledger's sums). */
export interface BatchProgress {
  completed: number;
  failed: number;
  usage: UsageTotals & { reasoning_tokens?: number };
  model: string;
}

const toSeconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1_000));

/** OpenAI's Batch object, with `metadata["edgeswarm.swarm_id"]` naming the swarm. */
export function toBatchObject(row: BatchRecord, progress: BatchProgress | null) {
  const errors: BatchLineError[] = row.errors === null ? [] : BatchLineErrorsSchema.parse(JSON.parse(row.errors));
  const userMetadata: Record<string, string> = row.metadata === null ? {} : BatchMetadataSchema.parse(JSON.parse(row.metadata));
  const counted = progress !== null && (row.status === "in_progress" || row.status === "cancelling");
  const usage = progress?.usage;
  return {
    id: row.id,
    object: "batch" as const,
    endpoint: row.endpoint,
    model: progress?.model ?? null,
    errors: errors.length === 0 ? null : { object: "list" as const, data: errors },
    input_file_id: row.input_file_id,
    completion_window: row.completion_window,
    status: row.status,
    output_file_id: row.output_file_id,
    error_file_id: row.error_file_id,
    created_at: Math.floor(row.created_at / 1_000),
    in_progress_at: toSeconds(row.in_progress_at),
    expires_at: toSeconds(row.expires_at),
    finalizing_at: toSeconds(row.finalizing_at),
    completed_at: toSeconds(row.completed_at),
    failed_at: toSeconds(row.failed_at),
    expired_at: toSeconds(row.expired_at),
    cancelling_at: toSeconds(row.cancelling_at),
    cancelled_at: toSeconds(row.cancelled_at),
    request_counts: {
      total: row.total,
      completed: counted ? progress.completed : row.completed,
      failed: counted ? progress.failed : row.failed,
    },
    usage:
      usage === undefined
        ? null
        : {
            input_tokens: usage.prompt_tokens,
            input_tokens_details: { cached_tokens: usage.cached_tokens },
            output_tokens: usage.completion_tokens,
            output_tokens_details: { reasoning_tokens: usage.reasoning_tokens ?? 0 },
            total_tokens: usage.total_tokens,
          },
    metadata: { ...userMetadata, ...(row.swarm_id === null ? {} : { [SWARM_ID_KEY]: row.swarm_id }) },
  };
}
