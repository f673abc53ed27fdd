// Test helper: inserts ledger rows straight into local D1, with defaults for the columns a test does not care about.
import { env } from "cloudflare:workers";
import { LEDGER_COLUMNS as COLUMNS, type LedgerRow } from "../../../src/ledger/d1-ledger.ts";

export type SeedRow = Partial<LedgerRow> & Pick<LedgerRow, "call_id" | "tenant" | "created_at">;

export function toLedgerRow(row: SeedRow): LedgerRow {
  return {
    swarm_id: "sw_seed",
    task_id: "t00001",
    attempt: 1,
    turn: 1,
    model: "mock-1",
    status: "ok",
    error_class: null,
    prompt_tokens: null,
    cached_tokens: null,
    completion_tokens: null,
    reasoning_tokens: null,
    total_tokens: null,
    cost_usd: null,
    latency_ms: 100,
    hedge: 0,
    ...row,
  };
}

export async function seedLedger(rows: readonly SeedRow[]): Promise<void> {
  const sql = `INSERT INTO ledger (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map((_, i) => `?${i + 1}`).join(", ")})`;
  const statement = env.LEDGER_DB.prepare(sql);
  await env.LEDGER_DB.batch(
    rows.map((row) => {
      const full = toLedgerRow(row);
      return statement.bind(...COLUMNS.map((column) => full[column]));
    }),
  );
}
