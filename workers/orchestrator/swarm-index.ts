// Reads the D1 `swarms` index: the tenant's swarms, newest first. Takes only the D1 database.
// The SwarmRoom writes and updates these rows (with its ledger flush), so counts may lag the room.
import { z } from "zod";
import { readBatchIdOf } from "../../src/core/batch-request.ts";
import type { LanePrior, SwarmState, UsageTotals } from "../../src/core/swarm-contract.ts";
import type { SwarmListCursor } from "./swarm-list-cursor.ts";

export interface SwarmSummary {
  id: string;
  name: string;
  model: string;
  state: SwarmState;
  tasks: number;
  counts: { succeeded: number; failed: number; cancelled: number; skipped_budget: number; skipped: number };
  usage: UsageTotals;
  cost_usd: number;
  created_at: string;
  finished_at: string | null;
  /** Present when the swarm runs a batch (POST /v1/batches): the batch's id. */
  batch_id?: string;
}

export interface SwarmPage {
  swarms: SwarmSummary[];
  /** Where the next page starts; null on the last page. */
  next: SwarmListCursor | null;
}

export interface SwarmIndex {
  listForTenant(tenant: string, page: { limit: number; after: SwarmListCursor | null }): Promise<SwarmPage>;
  /** Ids of swarms that have not finished (any tenant), oldest first: the ones cron wakes. */
  listUnfinished(limit: number): Promise<string[]>;
  /** The tenant's swarms that have not ended (planning, running, reducing). */
  countActive(tenant: string): Promise<number>;
  /**
   * What a lane of the tenant's latest swarm of `model` (its model label) carried and its calls'
   * latency, as that swarm's lanes measured them; null when no such swarm timed its calls.
   */
  lanePrior(tenant: string, model: string): Promise<LanePrior | null>;
}

const count = z.number().int().nonnegative();
const SwarmRowSchema = z.object({
  id: z.string(),
  name: z.string(),
  model: z.string(),
  state: z.enum(["planning", "running", "reducing", "completed", "completed_with_failures", "failed", "cancelled"]),
  task_count: count,
  created_at: z.number(),
  finished_at: z.number().nullable(),
  succeeded: count,
  failed: count,
  cancelled: count,
  skipped_budget: count,
  skipped: count,
  calls: count,
  prompt_tokens: count,
  cached_tokens: count,
  completion_tokens: count,
  total_tokens: count,
  cost_usd: z.number(),
  metadata: z.string().nullable(),
});
type SwarmRow = z.infer<typeof SwarmRowSchema>;

const LanePriorRowSchema = z.object({
  lane_slots: z.number().int().positive(),
  lane_latency_ms: z.number().positive(),
  // NULL for swarms indexed before schema v13 (the room then infers it from the slots).
  lane_ttfb_ms: z.number().nonnegative().nullable(),
});

/** How far back the tenant's swarms are searched for a prior: an older measurement may no longer hold. */
const LANE_PRIOR_MAX_AGE_MS = 7 * 24 * 3_600_000;

const COLUMNS =
  "id, name, model, state, task_count, created_at, finished_at, succeeded, failed, cancelled, skipped_budget, skipped, " +
  "calls, prompt_tokens, cached_tokens, completion_tokens, total_tokens, cost_usd, metadata";

function toSwarmSummary(row: SwarmRow): SwarmSummary {
  const batchId = readBatchIdOf(row.metadata);
  return {
    id: row.id,
    name: row.name,
    model: row.model,
    state: row.state,
    tasks: row.task_count,
    counts: { succeeded: row.succeeded, failed: row.failed, cancelled: row.cancelled, skipped_budget: row.skipped_budget, skipped: row.skipped },
    usage: {
      calls: row.calls,
      prompt_tokens: row.prompt_tokens,
      cached_tokens: row.cached_tokens,
      completion_tokens: row.completion_tokens,
      total_tokens: row.total_tokens,
    },
    cost_usd: row.cost_usd,
    created_at: new Date(row.created_at).toISOString(),
    finished_at: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
    ...(batchId === null ? {} : { batch_id: batchId }),
  };
}

export function createSwarmIndex(db: D1Database): SwarmIndex {
  return {
    async countActive(tenant) {
      const row = await db
        .prepare("SELECT COUNT(*) AS n FROM swarms WHERE tenant = ?1 AND state IN ('planning', 'running', 'reducing')")
        .bind(tenant)
        .first<{ n: number }>();
      return row?.n ?? 0;
    },
    async listForTenant(tenant, { limit, after }) {
      // One row past the page tells whether another page exists. Keyset pagination on
      // (created_at, id) follows the swarms_by_tenant index and stays stable while swarms are added.
      const statement =
        after === null
          ? db.prepare(`SELECT ${COLUMNS} FROM swarms WHERE tenant = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2`).bind(tenant, limit + 1)
          : db
              .prepare(
                `SELECT ${COLUMNS} FROM swarms WHERE tenant = ?1 AND (created_at < ?2 OR (created_at = ?2 AND id < ?3)) ` +
                  "ORDER BY created_at DESC, id DESC LIMIT ?4",
              )
              .bind(tenant, after.createdAt, after.id, limit + 1);
      const { results } = await statement.all();
      const rows = z.array(SwarmRowSchema).parse(results);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return {
        swarms: page.map(toSwarmSummary),
        next: rows.length > limit && last !== undefined ? { createdAt: last.created_at, id: last.id } : null,
      };
    },
    async lanePrior(tenant, model) {
      // The newest first along swarms_by_tenant (tenant, created_at DESC): a few rows at most.
      const row = await db
        .prepare(
          "SELECT lane_slots, lane_latency_ms, lane_ttfb_ms FROM swarms WHERE tenant = ?1 AND created_at >= ?2 AND model = ?3 AND lane_slots IS NOT NULL " +
            "AND lane_latency_ms IS NOT NULL ORDER BY created_at DESC, id DESC LIMIT 1",
        )
        .bind(tenant, Date.now() - LANE_PRIOR_MAX_AGE_MS, model)
        .first();
      const parsed = LanePriorRowSchema.safeParse(row);
      if (!parsed.success) return null;
      const { lane_slots: slots, lane_latency_ms: latencyMs, lane_ttfb_ms: ttfbMs } = parsed.data;
      return ttfbMs === null ? { slots, latencyMs } : { slots, latencyMs, ttfbMs };
    },
    async listUnfinished(limit) {
      const { results } = await db.prepare("SELECT id FROM swarms WHERE finished_at IS NULL ORDER BY created_at LIMIT ?1").bind(limit).all();
      return z
        .array(z.object({ id: z.string() }))
        .parse(results)
        .map((row) => row.id);
    },
  };
}
