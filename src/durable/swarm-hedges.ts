// The swarm's backup calls (limits.hedge): when a lane's call is due one (the threshold its pulls
// carry), whether one may go now (the limit, the tail, the budget), and what they cost. A granted
// backup is noted in the ledger before its lane sends it, so it is billed whatever happens next.
// It never sends a call and never changes a task's state.
import { fitsBudget, type Amount } from "../core/budget.ts";
import { mayHedge, toHedgeAfterMs, toHedgeLimit, toMeanLatencyMs, type HedgeSpec } from "../core/hedge-policy.ts";
import { callIdRange, toCallId } from "../core/ids.ts";
import { costOfUsage, resolvePrice, type PriceTable } from "../core/pricing.ts";
import type { CallStart, HedgeGrant, HedgesView } from "../core/swarm-contract.ts";
import type { SwarmLedger } from "./swarm-ledger.ts";
import type { SwarmRow } from "./swarm-room-rows.ts";
import type { SwarmStore } from "./swarm-store.ts";
import type { SwarmTotals } from "./swarm-totals.ts";

/** The threshold is recomputed at most this often (a pull reads it; lanes pull hundreds of times a second). */
const THRESHOLD_REFRESH_MS = 200;
/** The newest finished calls the percentile is taken over: the swarm's latency now, at a bounded cost. */
const SAMPLE_CALLS = 2_000;

interface Threshold {
  at: number;
  afterMs: number | null;
  meanLatencyMs: number | null;
}

export class SwarmHedges {
  private threshold: Threshold | null = null;

  constructor(
    private readonly sql: SqlStorage,
    private readonly store: SwarmStore,
    private readonly totals: SwarmTotals,
    private readonly ledger: SwarmLedger,
    private readonly prices: PriceTable,
  ) {}

  static migrate(sql: SqlStorage): void {
    sql.exec("CREATE TABLE IF NOT EXISTS hedges (id INTEGER PRIMARY KEY CHECK (id = 1), sent INTEGER NOT NULL)");
  }

  /** What a pull tells its lane: the delay after which a call may ask for a backup, or null (none now). */
  afterMsForPull(swarm: SwarmRow, now: number): number | null {
    const spec = this.spec(swarm);
    if (spec === null || swarm.finished_at !== null) return null;
    if (this.sent() >= toHedgeLimit(spec, swarm.task_count)) return null;
    return this.currentThreshold(spec, now).afterMs;
  }

  /**
   * A lane asks to send the backup of a call still running past the delay: granted (and noted, and
   * its worst case reserved) or refused with the reason. Idempotent for a backup already noted.
   */
  grant(swarm: SwarmRow, start: CallStart, now: number): HedgeGrant {
    const spec = this.spec(swarm);
    if (spec === null || swarm.finished_at !== null || swarm.state === "cancelled") return { granted: false, reason: "off" };
    const task = this.store.task(start.taskId);
    if (task === null || task.state !== "running" || task.attempts !== start.attempt) return { granted: false, reason: "not_running" };
    const sent = this.sent();
    const threshold = this.currentThreshold(spec, now);
    if (threshold.afterMs === null) return { granted: false, reason: "off" };
    const may = mayHedge({
      limit: toHedgeLimit(spec, swarm.task_count),
      sent,
      // Standby tasks are leased to lanes but not started: they go out after the calls now running,
      // so the swarm's tail has not begun while lanes hold them (counted as handed out, the whole
      // limit went to stragglers a second or more before the tail, and a slow call at the end ran
      // unhedged: 0.98× the pool instead of 0.65×, in a third of the early-headers runs).
      waiting: this.totals.waiting() + this.totals.standby(),
      window: swarm.window,
      meanLatencyMs: threshold.meanLatencyMs,
      elapsedMs: this.elapsedOf(swarm, start, now),
    });
    if (!may.ok) return { granted: false, reason: may.reason };
    // Budgets reserve for backups as for any call: its worst case, on top of what is committed.
    const worst = this.worstCase(start);
    const budget = this.store.budget(swarm);
    if (budget !== null) {
      const charged = this.totals.charged();
      const reserved = this.totals.reserved();
      if (!fitsBudget(budget, { usd: charged.usd + reserved.usd, tokens: charged.tokens + reserved.tokens }, worst)) {
        return { granted: false, reason: "budget" };
      }
    }
    this.sql.exec(
      "UPDATE tasks SET reserved_usd = reserved_usd + ?, reserved_tokens = reserved_tokens + ? WHERE id = ?",
      worst.usd,
      worst.tokens,
      start.taskId,
    );
    this.totals.reserve(worst);
    this.ledger.noteStarts(swarm, [{ ...start, hedge: true }]);
    this.sql.exec("INSERT INTO hedges (id, sent) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET sent = sent + 1");
    this.sentCache = sent + 1;
    return { granted: true };
  }

  /**
   * Standby tasks started now (`PullRequest.promoted`, at the lane's `startedAt`; `PullResponse.run`,
   * at `now`): their grant noted their first call when it was granted, and a call's age counts from
   * its start (the delay's running calls, and how long a call to back up has run). Only in a swarm
   * that hedges: one row written a task.
   */
  started(swarm: SwarmRow, tasks: readonly { taskId: string; attempt: number; startedAt?: number }[], now: number): void {
    if (tasks.length === 0 || this.spec(swarm) === null || swarm.finished_at !== null) return;
    for (const task of tasks) {
      const range = callIdRange(swarm.id, task.taskId, task.attempt);
      // The lane's clock may run ahead of the room's: never a start in the room's future.
      const at = Math.min(now, task.startedAt ?? now);
      this.sql.exec(
        "UPDATE open_calls SET started_at = ? WHERE call_id >= ? AND call_id < ? AND call_id NOT LIKE '%:h' AND started_at < ?",
        at,
        range.from,
        range.to,
        at,
      );
    }
  }

  /** null when the swarm does not hedge. */
  view(swarm: SwarmRow, now: number): HedgesView | null {
    const spec = this.spec(swarm);
    if (spec === null) return null;
    // Backups are marked 1 (answer not kept) or 2 (kept) in `calls`, under an index of their own.
    const recorded = this.sql
      .exec<{ usd: number | null; won: number | null }>("SELECT SUM(cost_usd) AS usd, SUM(hedge = 2) AS won FROM calls WHERE hedge >= 1")
      .one();
    return {
      sent: this.sent(),
      won: recorded.won ?? 0,
      cost_usd: recorded.usd ?? 0,
      limit: toHedgeLimit(spec, swarm.task_count),
      after_ms: swarm.finished_at === null ? this.currentThreshold(spec, now).afterMs : null,
    };
  }

  private spec(swarm: SwarmRow): HedgeSpec | null {
    return this.store.limits(swarm).hedge ?? null;
  }

  /** Backups granted so far (cached per instance; null = read again). */
  private sentCache: number | null = null;
  private sent(): number {
    this.sentCache ??= this.sql.exec<{ sent: number }>("SELECT sent FROM hedges WHERE id = 1").toArray()[0]?.sent ?? 0;
    return this.sentCache;
  }

  /**
   * The delay over the newest finished calls (backups left out: they started late on purpose) and
   * every call still running at its elapsed time. Not the notes of standby tasks a lane holds
   * unstarted: their age is the time since their grant, not a call's.
   */
  private currentThreshold(spec: HedgeSpec, now: number): Threshold {
    const cached = this.threshold;
    if (cached !== null && now - cached.at < THRESHOLD_REFRESH_MS && now >= cached.at) return cached;
    const finished = this.sql
      .exec<{ ms: number }>("SELECT latency_ms AS ms FROM calls WHERE status != 'unknown' AND hedge = 0 ORDER BY rowid DESC LIMIT ?", SAMPLE_CALLS)
      .toArray()
      .map((row) => row.ms);
    const running = this.sql
      .exec<{ ms: number }>(
        `SELECT ? - o.started_at AS ms FROM open_calls o JOIN tasks t ON t.id = o.task_id
         WHERE o.call_id NOT LIKE '%:h' AND NOT (t.standby = 1 AND t.attempts = o.attempt)`,
        now,
      )
      .toArray()
      .map((row) => Math.max(0, row.ms));
    const afterMs = toHedgeAfterMs(spec, { finished, running });
    const threshold: Threshold = { at: now, afterMs, meanLatencyMs: toMeanLatencyMs(finished) };
    this.threshold = threshold;
    return threshold;
  }

  /** How long the call to back up has run: from its note (0 when it has none). */
  private elapsedOf(swarm: SwarmRow, start: CallStart, now: number): number {
    const first = toCallId(swarm.id, start.taskId, start.attempt, start.turn);
    const row = this.sql.exec<{ started_at: number }>("SELECT started_at FROM open_calls WHERE call_id = ?", first).toArray()[0];
    return row === undefined ? 0 : Math.max(0, now - row.started_at);
  }

  /** The most one backup can cost: its prompt as estimated and max_tokens of output, at its model's price. */
  private worstCase(start: CallStart): Amount {
    const tokens = Math.max(0, Math.round(start.promptTokens)) + Math.max(0, Math.round(start.maxTokens));
    const price = resolvePrice(this.prices, start.model);
    const usage = { prompt_tokens: start.promptTokens, cached_tokens: 0, completion_tokens: start.maxTokens, reasoning_tokens: 0, total_tokens: tokens };
    return { usd: price === null ? 0 : costOfUsage(usage, price), tokens };
  }
}
