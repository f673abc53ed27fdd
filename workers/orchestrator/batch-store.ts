// D1 `batches`: a tenant's batches and their lifecycle (docs/data.md). Takes only the D1 database.
// Every read is by tenant; each status change is a conditional UPDATE, so two requests racing to
// finalize or cancel a batch cannot both do it.
import { z } from "zod";
import type { BatchLineError } from "../../src/core/batch-line.ts";

export const BATCH_STATUSES = ["validating", "failed", "in_progress", "finalizing", "completed", "expired", "cancelling", "cancelled"] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

const at = z.number().nullable();
const BatchRowSchema = z.object({
  id: z.string(),
  tenant: z.string(),
  input_file_id: z.string(),
  endpoint: z.string(),
  completion_window: z.string(),
  metadata: z.string().nullable(),
  swarm_id: z.string().nullable(),
  status: z.enum(BATCH_STATUSES),
  errors: z.string().nullable(),
  output_file_id: z.string().nullable(),
  error_file_id: z.string().nullable(),
  total: z.number().int(),
  completed: z.number().int(),
  failed: z.number().int(),
  created_at: z.number(),
  in_progress_at: at,
  expires_at: z.number(),
  finalizing_at: at,
  completed_at: at,
  failed_at: at,
  expired_at: at,
  cancelling_at: at,
  cancelled_at: at,
});
export type BatchRow = z.infer<typeof BatchRowSchema>;

export type NewBatch = Pick<BatchRow, "id" | "tenant" | "input_file_id" | "endpoint" | "completion_window" | "metadata" | "created_at" | "expires_at">;

export interface BatchStore {
  insert(batch: NewBatch): Promise<void>;
  get(tenant: string, id: string): Promise<BatchRow | null>;
  /** Newest first; `after` is the id of the last batch of the previous page. */
  list(tenant: string, page: { after: string | null; limit: number }): Promise<{ batches: BatchRow[]; hasMore: boolean }>;
  /** validating → failed, with the lines' errors. */
  fail(id: string, errors: readonly BatchLineError[], now: number): Promise<void>;
  /** validating → in_progress, with its swarm. */
  start(id: string, swarmId: string, total: number, now: number): Promise<void>;
  /** in_progress → cancelling (or expired's way there: `expired` marks why); false when it was not in progress. */
  cancel(id: string, now: number, expired: boolean): Promise<boolean>;
  /** in_progress | cancelling → finalizing; true for the one caller that claimed it. */
  claimFinalize(id: string, now: number): Promise<boolean>;
  /** finalizing → back to what it was, when writing the files failed (the next read tries again). */
  releaseFinalize(id: string, previous: "in_progress" | "cancelling"): Promise<void>;
  /** finalizing → completed | cancelled | expired, with the files and counts. */
  finish(
    id: string,
    result: { status: "completed" | "cancelled" | "expired"; outputFileId: string | null; errorFileId: string | null; completed: number; failed: number },
    now: number,
  ): Promise<void>;
}

export function createBatchStore(db: D1Database): BatchStore {
  return {
    async insert(batch) {
      await db
        .prepare(
          `INSERT INTO batches (id, tenant, input_file_id, endpoint, completion_window, metadata, status, created_at, expires_at)
           VALUES (?, ?, ?, ?, ?, ?, 'validating', ?, ?)`,
        )
        .bind(batch.id, batch.tenant, batch.input_file_id, batch.endpoint, batch.completion_window, batch.metadata, batch.created_at, batch.expires_at)
        .run();
    },

    async get(tenant, id) {
      const row = await db.prepare("SELECT * FROM batches WHERE tenant = ? AND id = ?").bind(tenant, id).first();
      return row === null ? null : BatchRowSchema.parse(row);
    },

    async list(tenant, { after, limit }) {
      const anchor =
        after === null
          ? null
          : await db.prepare("SELECT created_at FROM batches WHERE tenant = ? AND id = ?").bind(tenant, after).first<{ created_at: number }>();
      const { results } = await db
        .prepare(
          `SELECT * FROM batches WHERE tenant = ?1 AND (?2 IS NULL OR created_at < ?2 OR (created_at = ?2 AND id < ?3))
           ORDER BY created_at DESC, id DESC LIMIT ?4`,
        )
        .bind(tenant, anchor?.created_at ?? null, after ?? "", limit + 1)
        .all();
      const batches = results.map((row) => BatchRowSchema.parse(row));
      return { batches: batches.slice(0, limit), hasMore: batches.length > limit };
    },

    async fail(id, errors, now) {
      await db
        .prepare("UPDATE batches SET status = 'failed', errors = ?, failed_at = ? WHERE id = ? AND status = 'validating'")
        .bind(JSON.stringify(errors), now, id)
        .run();
    },

    async start(id, swarmId, total, now) {
      await db
        .prepare("UPDATE batches SET status = 'in_progress', swarm_id = ?, total = ?, in_progress_at = ? WHERE id = ? AND status = 'validating'")
        .bind(swarmId, total, now, id)
        .run();
    },

    async cancel(id, now, expired) {
      const result = await db
        .prepare(`UPDATE batches SET status = 'cancelling', cancelling_at = ?, expired_at = ? WHERE id = ? AND status = 'in_progress'`)
        .bind(now, expired ? now : null, id)
        .run();
      return result.meta.changes > 0;
    },

    async claimFinalize(id, now) {
      const result = await db
        .prepare("UPDATE batches SET status = 'finalizing', finalizing_at = ? WHERE id = ? AND status IN ('in_progress', 'cancelling')")
        .bind(now, id)
        .run();
      return result.meta.changes > 0;
    },

    async releaseFinalize(id, previous) {
      await db.prepare("UPDATE batches SET status = ?, finalizing_at = NULL WHERE id = ? AND status = 'finalizing'").bind(previous, id).run();
    },

    async finish(id, result, now) {
      const column = result.status === "completed" ? "completed_at" : result.status === "cancelled" ? "cancelled_at" : "expired_at";
      await db
        .prepare(
          `UPDATE batches SET status = ?, output_file_id = ?, error_file_id = ?, completed = ?, failed = ?, ${column} = COALESCE(${column}, ?)
           WHERE id = ? AND status = 'finalizing'`,
        )
        .bind(result.status, result.outputFileId, result.errorFileId, result.completed, result.failed, now, id)
        .run();
    },
  };
}
