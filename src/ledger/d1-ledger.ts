// The D1 side of the ledger: batched, idempotent writes of model-call rows and of the swarm index.
// Takes only the D1 binding. Never called per model call: the SwarmRoom flushes in batches.

/** One ledger row, as stored in D1 `ledger` (docs/data.md). Token columns are null when the upstream sent no usage. */
export type LedgerRow = {
  call_id: string;
  swarm_id: string;
  task_id: string;
  attempt: number;
  turn: number;
  tenant: string;
  model: string;
  /** `unknown`: the call's outcome died with its lane; its tokens and cost are the worst-case estimate. */
  status: "ok" | "error" | "unknown";
  error_class: string | null;
  prompt_tokens: number | null;
  cached_tokens: number | null;
  completion_tokens: number | null;
  reasoning_tokens: number | null;
  total_tokens: number | null;
  cost_usd: number | null;
  latency_ms: number;
  created_at: number;
  /** 1: the backup call of its turn (limits.hedge). */
  hedge: number;
};

/** One row of D1 `swarms`, the index of swarms across tenants. */
export type SwarmIndexRow = {
  id: string;
  tenant: string;
  name: string;
  model: string;
  state: string;
  task_count: number;
  origin: string;
  metadata: string | null;
  created_at: number;
  finished_at: number | null;
  succeeded: number;
  failed: number;
  cancelled: number;
  skipped_budget: number;
  skipped: number;
  calls: number;
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_usd: number;
  /** What one lane carried and its calls' mean latency and time to headers, ms, once a lane timed its calls (null before). */
  lane_slots: number | null;
  lane_latency_ms: number | null;
  lane_ttfb_ms: number | null;
};

/** The D1 `ledger` columns, in insert order. */
export const LEDGER_COLUMNS = [
  "call_id",
  "swarm_id",
  "task_id",
  "attempt",
  "turn",
  "tenant",
  "model",
  "status",
  "error_class",
  "prompt_tokens",
  "cached_tokens",
  "completion_tokens",
  "reasoning_tokens",
  "total_tokens",
  "cost_usd",
  "latency_ms",
  "created_at",
  "hedge",
] as const satisfies readonly (keyof LedgerRow)[];

const INDEX_COLUMNS = [
  "id",
  "tenant",
  "name",
  "model",
  "state",
  "task_count",
  "origin",
  "metadata",
  "created_at",
  "finished_at",
  "succeeded",
  "failed",
  "cancelled",
  "skipped_budget",
  "skipped",
  "calls",
  "prompt_tokens",
  "cached_tokens",
  "completion_tokens",
  "total_tokens",
  "cost_usd",
  "lane_slots",
  "lane_latency_ms",
  "lane_ttfb_ms",
] as const satisfies readonly (keyof SwarmIndexRow)[];

/** Index columns a later write leaves as they are when it has no value (a room that restarted has not measured its lanes again yet). */
const KEPT_WHEN_NULL: readonly string[] = ["lane_slots", "lane_latency_ms", "lane_ttfb_ms"];

/** D1 binds at most 100 parameters per statement. */
const D1_MAX_PARAMS = 100;
const ROWS_PER_INSERT = Math.floor(D1_MAX_PARAMS / LEDGER_COLUMNS.length);

/** Columns a call's real outcome replaces in an `unknown` row. */
const OUTCOME_COLUMNS = LEDGER_COLUMNS.filter(
  (c) => c !== "call_id" && c !== "swarm_id" && c !== "task_id" && c !== "attempt" && c !== "turn" && c !== "tenant" && c !== "hedge",
);

/**
 * Statements that insert the rows, leaving call ids already present as they are — so a repeated
 * flush is a no-op — except an `unknown` estimate, which the call's real outcome replaces.
 */
export function toLedgerInserts(db: D1Database, rows: readonly LedgerRow[]): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  const placeholders = `(${LEDGER_COLUMNS.map(() => "?").join(", ")})`;
  const replace = OUTCOME_COLUMNS.map((c) => `${c} = excluded.${c}`).join(", ");
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    const chunk = rows.slice(i, i + ROWS_PER_INSERT);
    const sql =
      `INSERT INTO ledger (${LEDGER_COLUMNS.join(", ")}) VALUES ${chunk.map(() => placeholders).join(", ")} ` +
      `ON CONFLICT (call_id) DO UPDATE SET ${replace} WHERE ledger.status = 'unknown' AND excluded.status != 'unknown'`;
    statements.push(db.prepare(sql).bind(...chunk.flatMap((row) => LEDGER_COLUMNS.map((column) => row[column]))));
  }
  return statements;
}

/** Insert or update the swarm's index row; `tenant`, `created_at` and `origin` never change. */
export function toSwarmIndexUpsert(db: D1Database, row: SwarmIndexRow): D1PreparedStatement {
  const updates = INDEX_COLUMNS.filter((c) => c !== "id" && c !== "tenant" && c !== "created_at" && c !== "origin")
    .map((c) => (KEPT_WHEN_NULL.includes(c) ? `${c} = COALESCE(excluded.${c}, swarms.${c})` : `${c} = excluded.${c}`))
    .join(", ");
  const sql = `INSERT INTO swarms (${INDEX_COLUMNS.join(", ")}) VALUES (${INDEX_COLUMNS.map(() => "?").join(", ")}) ON CONFLICT (id) DO UPDATE SET ${updates}`;
  return db.prepare(sql).bind(...INDEX_COLUMNS.map((column) => row[column]));
}

/**
 * Writes everything in one D1 transaction (`batch()`), so a flush lands whole or not at all.
 * Returns the rows D1 says it wrote (what D1 bills), 0 for a repeated flush of the same rows.
 */
export async function flushToLedger(db: D1Database, rows: readonly LedgerRow[], index: SwarmIndexRow | null): Promise<number> {
  const statements = toLedgerInserts(db, rows);
  if (index !== null) statements.push(toSwarmIndexUpsert(db, index));
  if (statements.length === 0) return 0;
  const results = await db.batch(statements);
  return results.reduce((sum, result) => sum + (result.meta.rows_written ?? 0), 0);
}
