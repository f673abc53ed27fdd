// The swarm's ledger: one `calls` row per model call (its charge against the budget beside it),
// flushed to D1 with the swarm's index row in batched transactions; usage totals and latency
// percentiles over it; and when the alarm must next flush. It never changes a task's state.
import { chargeOfCall } from "../core/budget.ts";
import { toCacheView } from "../core/cache-warmup.ts";
import { isUpstreamHealthFailure } from "../core/circuit-breaker.ts";
import type { RoomSettings } from "../core/env-settings.ts";
import { callIdRange, isHedgeCallId, toCallId } from "../core/ids.ts";
import { percentiles } from "../core/percentile.ts";
import { costOfUsage, resolvePrice } from "../core/pricing.ts";
import type { CallRecord, CallStart, LanePrior } from "../core/swarm-contract.ts";
import type { Usage } from "../core/usage.ts";
import { flushToLedger, type LedgerRow, type SwarmIndexRow } from "../ledger/d1-ledger.ts";
import type { SwarmMeters } from "./swarm-meters.ts";
import type { SwarmRow, TaskRow } from "./swarm-room-rows.ts";
import type { SwarmRouting } from "./swarm-routing.ts";
import type { SwarmStore } from "./swarm-store.ts";
import type { SwarmTotals, UsageSums } from "./swarm-totals.ts";

/** While a swarm runs, its latency percentiles are recomputed at most this often. */
const LATENCY_REFRESH_MS = 1_000;
/** Ledger rows per D1 transaction. */
const FLUSH_CHUNK = 500;
/** After a failed flush (D1 or the TenantBudget down), the next try waits this long. */
export const FLUSH_RETRY_MS = 5_000;
/**
 * An open call of an attempt that is no longer its task's running one is settled as `unknown` once
 * it is this old: its lane had time to report it, so its outcome died with the lane.
 */
export const ORPHAN_CALL_MS = 30_000;

/** A call's outcome columns of `calls`, in order: status, error_class, the five token counts, cost_usd, latency_ms. */
function toOutcomeValues(call: CallRecord, cost: number | null): (string | number | null)[] {
  const usage = call.usage;
  return [
    call.status,
    call.errorClass,
    usage?.prompt_tokens ?? null,
    usage?.cached_tokens ?? null,
    usage?.completion_tokens ?? null,
    usage?.reasoning_tokens ?? null,
    usage?.total_tokens ?? null,
    cost,
    Math.max(0, Math.round(call.latencyMs)),
  ];
}

/** `calls.hedge`: 0 a turn's first call, 1 its backup whose answer was not kept, 2 its backup whose answer was. */
function toHedgeColumn(call: CallRecord): number {
  return call.hedge === undefined ? 0 : call.hedge === "won" ? 2 : 1;
}

type OpenCallRow = {
  call_id: string;
  task_id: string;
  attempt: number;
  turn: number;
  model: string;
  prompt_tokens: number;
  max_tokens: number;
  started_at: number;
  /** A grant's note (its first call): null once confirmed by an explicit note. */
  note_until: number | null;
};

/**
 * A grant's note of the attempt's first call holds for this long: a lane that starts the call by
 * then sends no note of its own (it lists the call in its pulls' `started`); later, it notes it.
 */
export const PRE_NOTE_MS = 2_000;

/** The call ids of the started calls a pull lists, as `open_calls` keys them. */
export function toStartedIds(swarmId: string, started: readonly { taskId: string; attempt: number; turn: number }[] | undefined): Set<string> {
  return new Set((started ?? []).map((s) => toCallId(swarmId, s.taskId, s.attempt, s.turn)));
}

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
    /** What the swarm's lanes measured, for the index row (the next swarm's StartSwarmInput.lanePrior). */
    private readonly measuredLanes: () => LanePrior | null = () => null,
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
    outcomes?: { tasks: ReadonlyMap<string, TaskRow> },
  ): { successes: number; rateLimited: boolean } {
    let successes = 0;
    let rateLimited = false;
    // A sub-task reserves its whole attempt (every turn); one call is charged at most its share.
    const callsPerTask = this.store.callsPerTask(swarm);
    for (const report of reports) {
      for (const call of report.calls) {
        if (!this.insertCall(swarm, report, call, callsPerTask, outcomes)) continue;
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

  /**
   * Notes calls about to be sent (idempotent by call id). A call already in the ledger is not
   * noted again (a lane that repeats a note after its call ended).
   */
  noteStarts(swarm: SwarmRow, starts: readonly CallStart[]): void {
    for (const start of starts) {
      const callId = toCallId(swarm.id, start.taskId, start.attempt, start.turn, start.hedge === true);
      // A call the grant noted is confirmed: it started, whatever its lane lists from now on.
      this.sql.exec(
        `INSERT INTO open_calls (call_id, task_id, attempt, turn, model, prompt_tokens, max_tokens, started_at)
         SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM calls WHERE call_id = ?)
         ON CONFLICT (call_id) DO UPDATE SET note_until = NULL`,
        callId,
        start.taskId,
        start.attempt,
        start.turn,
        start.model,
        Math.max(0, Math.round(start.promptTokens)),
        Math.max(0, Math.round(start.maxTokens)),
        start.startedAt,
        callId,
      );
    }
    this.openCount = null;
  }

  /**
   * The grant notes each granted attempt's first call (no RPC of the lane's), all in one statement;
   * each note holds `until` (the grant + PRE_NOTE_MS, a standby task's its lease) for a lane that
   * starts the call without noting it itself.
   */
  preNote(swarm: SwarmRow, notes: readonly { start: CallStart; until: number }[], lane: string): void {
    if (notes.length === 0) return;
    const rows = notes.map(({ start, until }) => [
      toCallId(swarm.id, start.taskId, start.attempt, start.turn),
      start.taskId,
      start.attempt,
      start.turn,
      start.model,
      start.promptTokens,
      start.maxTokens,
      start.startedAt,
      until,
    ]);
    const inserted = this.sql
      .exec(
        `INSERT OR IGNORE INTO open_calls (call_id, task_id, attempt, turn, model, prompt_tokens, max_tokens, started_at, lane, note_until)
         SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, ?, value ->> 8 FROM json_each(?)
         RETURNING call_id`,
        lane,
        JSON.stringify(rows),
      )
      .toArray().length;
    this.countOpen(inserted);
  }

  /**
   * A lane's pull, built at `sentAt` (its clock), lists the grant-noted calls it started: a note of
   * this lane past its time that the pull does not list was never started (the lane notes a call
   * it starts later itself), so it goes, unbilled.
   */
  dropUnstartedNotes(lane: string, sentAt: number, started: ReadonlySet<string>): void {
    if (this.openCalls() === 0) return;
    // The lane's notes are found by a scan of every open call (about the window's worth: an index
    // on the lane would write two more rows per call), which is why a lane lists every call it
    // started only every STARTED_LIST_MS, and this runs only on such whole lists.
    const stale = this.sql
      .exec<{ call_id: string }>("SELECT call_id FROM open_calls WHERE lane = ? AND note_until IS NOT NULL AND note_until < ?", lane, sentAt)
      .toArray()
      .filter((row) => !started.has(row.call_id));
    for (const row of stale) this.deleteOpenCall(row.call_id);
  }

  /**
   * The attempt's outcome is known (reported), or its lease ended with none: each of its calls
   * that was noted but never recorded is billed as `unknown`, at its estimate. With the reporting
   * pull's `started`, a grant's note the lane does not list was never started, and goes unbilled;
   * `recorded` are the call ids the pull's reports carried, whose notes just go (insertCalls left
   * them for this). Returns how many were billed.
   */
  settleOpenCalls(swarm: SwarmRow, taskId: string, attempt: number, now: number, started?: ReadonlySet<string>, recorded?: ReadonlySet<string>): number {
    if (this.openCalls() === 0) return 0;
    // The attempt's call ids share a prefix (toCallId: swarm:task:attempt:turn), so a range of the
    // primary key finds them without a scan of every open call (about the window's worth); one
    // statement takes them out and hands them back.
    const range = callIdRange(swarm.id, taskId, attempt);
    const open = this.sql.exec<OpenCallRow>("DELETE FROM open_calls WHERE call_id >= ? AND call_id < ? RETURNING *", range.from, range.to).toArray();
    if (open.length === 0) return 0;
    this.countOpen(-open.length);
    let billed = 0;
    for (const row of open) {
      if (recorded?.has(row.call_id)) continue;
      if (started !== undefined && row.note_until !== null && !started.has(row.call_id)) continue;
      this.settleOpenCall(swarm, row, now);
      billed += 1;
    }
    return billed;
  }

  /**
   * Open calls nobody will report: of attempts no longer running (their lane lost its lease and
   * died) once ORPHAN_CALL_MS old, or every one when the swarm has ended. Called from the alarm.
   */
  settleOrphanCalls(swarm: SwarmRow, now: number): number {
    if (this.openCalls() === 0) return 0;
    const rows = this.sql
      .exec<OpenCallRow>(
        `SELECT o.* FROM open_calls o LEFT JOIN tasks t ON t.id = o.task_id
         WHERE ? OR ((t.id IS NULL OR t.state != 'running' OR t.attempts != o.attempt) AND o.started_at <= ?)`,
        swarm.finished_at !== null ? 1 : 0,
        now - ORPHAN_CALL_MS,
      )
      .toArray();
    for (const row of rows) this.settleOpenCall(swarm, row, now);
    return rows.length;
  }

  /** When the alarm must next settle orphaned calls, or null when none is open. */
  private nextOrphanCheck(now: number): number | null {
    return this.openCalls() === 0 ? null : now + ORPHAN_CALL_MS;
  }

  private settleOpenCall(swarm: SwarmRow, row: OpenCallRow, now: number): void {
    // The worst case the call could have cost: its prompt (as estimated) and max_tokens of output.
    const usage: Usage = {
      prompt_tokens: row.prompt_tokens,
      cached_tokens: 0,
      completion_tokens: row.max_tokens,
      reasoning_tokens: 0,
      total_tokens: row.prompt_tokens + row.max_tokens,
    };
    const call: CallRecord = {
      turn: row.turn,
      model: row.model,
      usage,
      latencyMs: Math.max(0, now - row.started_at),
      status: "unknown",
      errorClass: null,
      startedAt: row.started_at,
      // A backup whose outcome is unknown was aborted (its primary answered first) or died with its lane.
      ...(isHedgeCallId(row.call_id) ? { hedge: "lost" as const } : {}),
    };
    if (this.insertCall(swarm, { taskId: row.task_id, attempt: row.attempt }, call, this.store.callsPerTask(swarm)) && this.unknownCount !== null) {
      this.unknownCount += 1;
    }
    this.deleteOpenCall(row.call_id);
    console.warn(JSON.stringify({ event: "call_outcome_unknown", swarm_id: swarm.id, call_id: row.call_id, estimated_tokens: usage.total_tokens }));
  }

  /** Calls billed as `unknown` (their outcome died with their lane), at an estimate. */
  estimatedCalls(): number {
    return this.unknownCalls();
  }

  /** Calls recorded as `unknown` (cached per instance; null = read again). */
  private unknownCount: number | null = null;
  private unknownCalls(): number {
    this.unknownCount ??= this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE status = 'unknown'").one().n;
    return this.unknownCount;
  }

  /** A call's note goes (it is recorded, billed, or was never started). */
  private deleteOpenCall(callId: string): void {
    if (this.sql.exec("DELETE FROM open_calls WHERE call_id = ?", callId).rowsWritten > 0) this.countOpen(-1);
  }

  /** Kept as notes come and go, so the count is read from the table once per instance, not once per pull. */
  private countOpen(delta: number): void {
    if (this.openCount !== null) this.openCount += delta;
  }

  /** Calls noted and not yet recorded (cached per instance; null = read again). */
  private openCount: number | null = null;
  private openCalls(): number {
    this.openCount ??= this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM open_calls").one().n;
    return this.openCount;
  }

  /**
   * Inserts the call's ledger row; false when its call id was already recorded. A real outcome
   * replaces an `unknown` estimate of the same call (a lane slower than its lease, not dead).
   */
  private insertCall(
    swarm: SwarmRow,
    report: { taskId: string; attempt: number },
    call: CallRecord,
    callsPerTask: number,
    outcomes?: { tasks: ReadonlyMap<string, TaskRow> },
  ): boolean {
    const usage = call.usage;
    const price = resolvePrice(this.prices, call.model);
    const cost = usage !== null && price !== null ? costOfUsage(usage, price) : null;
    const callId = toCallId(swarm.id, report.taskId, report.attempt, call.turn, call.hedge !== undefined);
    const task = outcomes !== undefined ? outcomes.tasks.get(report.taskId) : (this.store.task(report.taskId) ?? undefined);
    const share = task?.kind === "task" ? callsPerTask : 1;
    const reservation = task === undefined ? { usd: 0, tokens: 0 } : { usd: task.reserved_usd / share, tokens: Math.ceil(task.reserved_tokens / share) };
    const charge = chargeOfCall(call, price, reservation);
    if (call.status !== "unknown" && this.unknownCalls() > 0 && this.replaceEstimate(callId, call, cost, charge)) return true;
    const cursor = this.sql.exec(
      `INSERT OR IGNORE INTO calls (call_id, task_id, attempt, turn, model, status, error_class, prompt_tokens, cached_tokens,
         completion_tokens, reasoning_tokens, total_tokens, cost_usd, latency_ms, created_at, charged_usd, charged_tokens, hedge)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      callId,
      report.taskId,
      report.attempt,
      call.turn,
      call.model,
      ...toOutcomeValues(call, cost),
      call.startedAt,
      charge.usd,
      charge.tokens,
      toHedgeColumn(call),
    );
    if (cursor.rowsWritten === 0) return false;
    this.totals.addCall(charge, usage, cost);
    // With outcomes, settleOpenCalls takes the note out right after, with the attempt's others.
    if (outcomes === undefined && call.status !== "unknown" && this.openCalls() > 0) this.deleteOpenCall(callId);
    return true;
  }

  /**
   * A call settled as `unknown` whose real outcome arrived after all (its lane was slower than its
   * lease, not dead): the estimate becomes the real row, in place, and goes to D1 again (the flush
   * upserts over an `unknown` row). Returns whether there was an estimate to replace.
   */
  private replaceEstimate(callId: string, call: CallRecord, cost: number | null, charge: { usd: number; tokens: number }): boolean {
    const replaced = this.sql
      .exec<{ rowid: number }>(
        `UPDATE calls SET status = ?, error_class = ?, prompt_tokens = ?, cached_tokens = ?, completion_tokens = ?, reasoning_tokens = ?,
           total_tokens = ?, cost_usd = ?, latency_ms = ?, charged_usd = ?, charged_tokens = ?
         WHERE call_id = ? AND status = 'unknown' RETURNING rowid`,
        ...toOutcomeValues(call, cost),
        charge.usd,
        charge.tokens,
        callId,
      )
      .toArray()[0];
    if (replaced === undefined) return false;
    if (this.unknownCount !== null) this.unknownCount -= 1;
    // Rows past the mark are flushed again (D1 ignores those it has, and takes this one).
    this.sql.exec("UPDATE ledger_sync SET flushed_rowid = MIN(flushed_rowid, ?) WHERE id = 1", replaced.rowid - 1);
    this.totals.invalidate();
    return true;
  }

  /** Writes unflushed ledger rows and, when changed, the swarm's index row to D1. */
  async flush(swarm: SwarmRow): Promise<void> {
    for (;;) {
      const mark = this.flushedRowid();
      const rows = this.sql
        .exec<LedgerRow & { rowid: number }>(
          `SELECT rowid, call_id, task_id, attempt, turn, model, status, error_class, prompt_tokens, cached_tokens,
                  completion_tokens, reasoning_tokens, total_tokens, cost_usd, latency_ms, created_at, hedge
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

  /**
   * The status's `cache`: the share of prompt tokens the upstream served from its cache, and what
   * that saved at each model's cached rate. Per model only once some call reported cached tokens.
   */
  cacheView(): { hit_ratio: number; saved_usd: number } {
    const usage = this.totals.usage();
    if (usage.cached_tokens === 0) return { hit_ratio: 0, saved_usd: 0 };
    const rows = this.sql
      .exec<{ model: string; p: number | null; c: number | null }>("SELECT model, SUM(prompt_tokens) AS p, SUM(cached_tokens) AS c FROM calls GROUP BY model")
      .toArray();
    return toCacheView(rows.map((row) => ({ price: resolvePrice(this.prices, row.model), promptTokens: row.p ?? 0, cachedTokens: row.c ?? 0 })));
  }

  toIndexRow(swarm: SwarmRow): SwarmIndexRow {
    const counts = this.totals.counts();
    const usage = this.usageTotals();
    const lanes = this.measuredLanes();
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
      skipped: counts.skipped,
      calls: usage.calls,
      prompt_tokens: usage.prompt_tokens,
      cached_tokens: usage.cached_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      cost_usd: usage.cost_usd,
      lane_slots: lanes?.slots ?? null,
      lane_latency_ms: lanes?.latencyMs ?? null,
      lane_ttfb_ms: lanes?.ttfbMs ?? null,
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
      const [p50 = null, p95 = null] = percentiles(latencies, [50, 95]);
      this.latencyCache = { calls, at: now, p50, p95 };
    }
    return { p50: this.latencyCache?.p50 ?? null, p95: this.latencyCache?.p95 ?? null };
  }

  /** Did this attempt of the task make any call (recorded, or noted and not yet recorded)? */
  madeCalls(swarmId: string, taskId: string, attempt: number): boolean {
    const range = callIdRange(swarmId, taskId, attempt);
    if (this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM calls WHERE call_id >= ? AND call_id < ?", range.from, range.to).one().n > 0) return true;
    return (
      this.openCalls() > 0 &&
      this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM open_calls WHERE call_id >= ? AND call_id < ?", range.from, range.to).one().n > 0
    );
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
    const orphans = this.nextOrphanCheck(now);
    const times = [this.flushAlarm(swarm, now), orphans].filter((at): at is number => at !== null);
    return times.length === 0 ? null : Math.min(...times);
  }

  private flushAlarm(swarm: SwarmRow, now: number): number | null {
    if (this.retryAt !== null) return this.retryAt;
    const dirty = this.totals.unflushed() > 0 || swarm.index_dirty === 1 ? now + this.flushMs : null;
    if (this.flushDue === null) return dirty;
    return dirty === null ? this.flushDue : Math.min(dirty, this.flushDue);
  }
}
