// The swarm's ledger: one `calls` row per model call (its charge against the budget beside it),
// flushed to D1 with the swarm's index row in batched transactions; usage totals and latency
// percentiles over it; and when the alarm must next flush. It never changes a task's state.
import { chargeOfCall } from "../core/budget.ts";
import { isUpstreamHealthFailure } from "../core/circuit-breaker.ts";
import type { RoomSettings } from "../core/env-settings.ts";
import { toCallId } from "../core/ids.ts";
import { percentile } from "../core/percentile.ts";
import { costOfUsage, resolvePrice } from "../core/pricing.ts";
import type { CallRecord, TaskKind } from "../core/swarm-contract.ts";
import { flushToLedger, type LedgerRow, type SwarmIndexRow } from "../ledger/d1-ledger.ts";
import type { SwarmMeters } from "./swarm-meters.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";
import type { SwarmRouting } from "./swarm-routing.ts";
import type { SwarmStore } from "./swarm-store.ts";
import type { SwarmTotals, UsageSums } from "./swarm-totals.ts";

/** While a swarm runs, its latency percentiles are recomputed at most this often. */
const LATENCY_REFRESH_MS = 1_000;
/** Ledger rows per D1 transaction. */
const FLUSH_CHUNK = 500;
/** After a failed flush (D1 or the TenantBudget down), the next try waits this long. */
export const FLUSH_RETRY_MS = 5_000;

export class SwarmLedger {
  /** p50/p95 over the calls recorded so far, recomputed only when a call was added (status is polled). */
  private latencyCache: { calls: number; at: number; p50: number | null; p95: number | null } | null = null;
  /** Set when the swarm ended: its final index row reaches D1 on the next alarm, right away. */
  private flushDue: number | null = null;
  /** Set when the alarm's flush failed: no flush is tried again before. */
  private retryAt: number | null = null;
  private readonly prices: RoomSettings["prices"];
  private readonly flushMs: number;

  constructor(
    private readonly sql: SqlStorage,
    private readonly store: SwarmStore,
    private readonly totals: SwarmTotals,
    private readonly routing: SwarmRouting,
    private readonly meters: SwarmMeters,
    settings: Pick<RoomSettings, "prices" | "flushMs">,
    private readonly db: D1Database,
  ) {
    this.prices = settings.prices;
    this.flushMs = settings.flushMs;
  }

  /**
   * Inserts the reports' call rows. Only a call seen for the first time moves its model's breaker
   * and counts for the window; returns those counts.
   */
  insertCalls(
    swarm: SwarmRow,
    reports: readonly { taskId: string; attempt: number; calls: CallRecord[] }[],
    now: number,
  ): { successes: number; rateLimited: boolean } {
    let successes = 0;
    let rateLimited = false;
    // A sub-task reserves its whole attempt (every turn); one call is charged at most its share.
    const callsPerTask = this.store.callsPerTask(swarm);
    for (const report of reports) {
      for (const call of report.calls) {
        if (!this.insertCall(swarm, report, call, callsPerTask)) continue;
        if (call.status === "ok") {
          successes += 1;
          this.routing.updateCircuit(call.model, "success", now);
        } else if (call.errorClass !== null && isUpstreamHealthFailure(call.errorClass)) {
          this.routing.updateCircuit(call.model, "failure", now);
        }
        if (call.errorClass === "rate_limited") rateLimited = true;
      }
    }
    return { successes, rateLimited };
  }

  /** Inserts the call's ledger row; false when its call id was already recorded. */
  private insertCall(swarm: SwarmRow, report: { taskId: string; attempt: number }, call: CallRecord, callsPerTask: number): boolean {
    const usage = call.usage;
    const price = resolvePrice(this.prices, call.model);
    const cost = usage !== null && price !== null ? costOfUsage(usage, price) : null;
    const row = this.sql
      .exec<{ usd: number; tokens: number; kind: TaskKind }>(
        "SELECT reserved_usd AS usd, reserved_tokens AS tokens, kind FROM tasks WHERE id = ?",
        report.taskId,
      )
      .toArray()[0];
    const share = row?.kind === "task" ? callsPerTask : 1;
    const reservation = row === undefined ? { usd: 0, tokens: 0 } : { usd: row.usd / share, tokens: Math.ceil(row.tokens / share) };
    const charge = chargeOfCall(call, price, reservation);
    const cursor = this.sql.exec(
      `INSERT OR IGNORE INTO calls (call_id, task_id, attempt, turn, model, status, error_class, prompt_tokens, cached_tokens,
         completion_tokens, reasoning_tokens, total_tokens, cost_usd, latency_ms, created_at, charged_usd, charged_tokens)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      toCallId(swarm.id, report.taskId, report.attempt, call.turn),
      report.taskId,
      report.attempt,
      call.turn,
      call.model,
      call.status,
      call.errorClass,
      usage?.prompt_tokens ?? null,
      usage?.cached_tokens ?? null,
      usage?.completion_tokens ?? null,
      usage?.reasoning_tokens ?? null,
      usage?.total_tokens ?? null,
      cost,
      Math.max(0, Math.round(call.latencyMs)),
      call.startedAt,
      charge.usd,
      charge.tokens,
    );
    if (cursor.rowsWritten === 0) return false;
    this.totals.addCall(charge, usage, cost);
    return true;
  }

  /** Writes unflushed ledger rows and, when changed, the swarm's index row to D1. */
  async flush(swarm: SwarmRow): Promise<void> {
    for (;;) {
      const mark = this.flushedRowid();
      const rows = this.sql
        .exec<LedgerRow & { rowid: number }>(
          `SELECT rowid, call_id, task_id, attempt, turn, model, status, error_class, prompt_tokens, cached_tokens,
                  completion_tokens, reasoning_tokens, total_tokens, cost_usd, latency_ms, created_at
           FROM calls WHERE rowid > ? ORDER BY rowid LIMIT ?`,
          mark,
          FLUSH_CHUNK,
        )
        .toArray()
        .map((row) => ({ ...row, swarm_id: swarm.id, tenant: swarm.tenant }));
      const current = this.store.swarm();
      const index = current !== null && current.index_dirty === 1 ? this.toIndexRow(current) : null;
      if (rows.length === 0 && index === null) return;
      const written = await flushToLedger(
        this.db,
        rows.map(({ rowid: _rowid, ...row }) => row),
        index,
      );
      this.meters.add("d1_rows_written", written);
      const last = rows[rows.length - 1];
      if (last) {
        // One row per flush, not one per call: every call up to `last` is in D1 now.
        this.sql.exec("UPDATE ledger_sync SET flushed_rowid = ? WHERE id = 1", last.rowid);
        this.totals.flushed(rows.length);
      }
      // Only clear the flag if nothing changed the swarm while the write was in flight.
      if (index !== null) {
        const after = this.store.swarm();
        if (after !== null && JSON.stringify(this.toIndexRow(after)) === JSON.stringify(index)) {
          this.sql.exec("UPDATE swarm SET index_dirty = 0");
        }
      }
      if (rows.length < FLUSH_CHUNK) return;
    }
  }

  /** The rowid of the last call in D1 (calls are appended in rowid order and never deleted). */
  private flushedRowid(): number {
    return this.sql.exec<{ n: number }>("SELECT flushed_rowid AS n FROM ledger_sync WHERE id = 1").toArray()[0]?.n ?? 0;
  }

  /** Usage over every recorded call (running totals, not a sum over the table). */
  usageTotals(): UsageSums {
    return this.totals.usage();
  }

  toIndexRow(swarm: SwarmRow): SwarmIndexRow {
    const counts = this.totals.counts();
    const usage = this.usageTotals();
    return {
      id: swarm.id,
      tenant: swarm.tenant,
      name: swarm.name,
      model: swarm.model,
      state: swarm.state,
      task_count: swarm.task_count,
      origin: swarm.origin,
      metadata: swarm.metadata,
      created_at: swarm.created_at,
      finished_at: swarm.finished_at,
      succeeded: counts.succeeded,
      failed: counts.failed,
      cancelled: counts.cancelled,
      skipped_budget: counts.skipped_budget,
      calls: usage.calls,
      prompt_tokens: usage.prompt_tokens,
      cached_tokens: usage.cached_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      cost_usd: usage.cost_usd,
    };
  }

  /**
   * p50/p95 over every call: a sort of the whole table, so while calls keep coming it is redone at
   * most every LATENCY_REFRESH_MS (status is polled); once the swarm has ended, exact.
   */
  latencyPercentiles(calls: number, now: number, final: boolean): { p50: number | null; p95: number | null } {
    const cache = this.latencyCache;
    const fresh = cache !== null && (cache.calls === calls || (!final && now - cache.at < LATENCY_REFRESH_MS));
    if (!fresh) {
      const latencies = this.sql
        .exec<{ latency_ms: number }>("SELECT latency_ms FROM calls")
        .toArray()
        .map((row) => row.latency_ms);
      this.latencyCache = { calls, at: now, p50: percentile(latencies, 50), p95: percentile(latencies, 95) };
    }
    return { p50: this.latencyCache?.p50 ?? null, p95: this.latencyCache?.p95 ?? null };
  }

  /** Did this attempt of the task make any call? */
  madeCalls(taskId: string, attempt: number): boolean {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE task_id = ? AND attempt = ?", taskId, attempt).one().n > 0;
  }

  /** The swarm ended: the next alarm flushes right away. */
  flushSoon(now: number): void {
    if (this.flushDue === null || now < this.flushDue) this.flushDue = now;
  }

  /** The alarm's flush failed: it is tried again FLUSH_RETRY_MS later. */
  flushFailed(now: number): void {
    this.retryAt = now + FLUSH_RETRY_MS;
  }

  /** The alarm runs (and flushes): what was noted for it is done with. */
  forgetNoted(): void {
    this.flushDue = null;
    this.retryAt = null;
  }

  /**
   * When the alarm must next flush: `flushMs` after a change D1 has not seen, or at once when the
   * swarm just ended; after a failed flush, at its retry (sooner would only fail again, or spin).
   */
  nextAlarm(swarm: SwarmRow, now: number): number | null {
    if (this.retryAt !== null) return this.retryAt;
    const dirty = this.totals.unflushed() > 0 || swarm.index_dirty === 1 ? now + this.flushMs : null;
    if (this.flushDue === null) return dirty;
    return dirty === null ? this.flushDue : Math.min(dirty, this.flushDue);
  }
}
