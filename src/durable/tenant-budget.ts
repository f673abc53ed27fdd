// TenantBudget: one SQLite-backed Durable Object per tenant and UTC month, the atomic authority on
// its monthly spend. A swarm reserves its worst case (capped at what is left) when it starts and
// settles to what it was charged when it ends, so concurrent swarms can never overspend the month.
// Reserve-then-grant happens inside one single-threaded object: no read-then-write race.
import { DurableObject } from "cloudflare:workers";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS swarms (
  swarm_id        TEXT PRIMARY KEY,
  reserved_usd    REAL NOT NULL,
  reserved_tokens INTEGER NOT NULL,
  charged_usd     REAL,
  charged_tokens  INTEGER,
  created_at      INTEGER NOT NULL
);
`;

export interface TenantReservation {
  /** What the swarm may spend this month: its ask, capped at what the month has left (≥ 0). */
  usd: number | null;
  tokens: number | null;
}

export interface TenantBudgetStatus {
  committedUsd: number;
  committedTokens: number;
  swarms: number;
}

export class TenantBudget extends DurableObject<unknown> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(SCHEMA);
  }

  /**
   * Reserves up to `usd`/`tokens` for a swarm against the month's caps (null = no cap of that kind)
   * and answers what was granted. Idempotent by swarm id: asking again returns the first grant.
   */
  async reserve(request: { swarmId: string; usd: number; tokens: number; maxUsd: number | null; maxTokens: number | null }): Promise<TenantReservation> {
    const existing = this.sql
      .exec<{ reserved_usd: number; reserved_tokens: number }>("SELECT reserved_usd, reserved_tokens FROM swarms WHERE swarm_id = ?", request.swarmId)
      .toArray()[0];
    if (existing !== undefined) {
      return { usd: request.maxUsd === null ? null : existing.reserved_usd, tokens: request.maxTokens === null ? null : existing.reserved_tokens };
    }
    const committed = this.committed();
    const usd = request.maxUsd === null ? request.usd : Math.max(0, Math.min(request.usd, request.maxUsd - committed.usd));
    const tokens = request.maxTokens === null ? request.tokens : Math.max(0, Math.min(request.tokens, request.maxTokens - committed.tokens));
    this.sql.exec(
      "INSERT INTO swarms (swarm_id, reserved_usd, reserved_tokens, created_at) VALUES (?, ?, ?, ?)",
      request.swarmId,
      usd,
      Math.floor(tokens),
      Date.now(),
    );
    return { usd: request.maxUsd === null ? null : usd, tokens: request.maxTokens === null ? null : Math.floor(tokens) };
  }

  /** The swarm ended: its reservation is replaced by what it was charged. Idempotent. */
  async settle(request: { swarmId: string; usd: number; tokens: number }): Promise<void> {
    this.sql.exec(
      "UPDATE swarms SET charged_usd = ?, charged_tokens = ? WHERE swarm_id = ? AND charged_usd IS NULL",
      request.usd,
      Math.round(request.tokens),
      request.swarmId,
    );
  }

  async status(): Promise<TenantBudgetStatus> {
    const committed = this.committed();
    const swarms = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM swarms").one().n;
    return { committedUsd: committed.usd, committedTokens: committed.tokens, swarms };
  }

  /** Charged for settled swarms, reserved for running ones. */
  private committed(): { usd: number; tokens: number } {
    const row = this.sql
      .exec<{ usd: number | null; tokens: number | null }>(
        "SELECT SUM(COALESCE(charged_usd, reserved_usd)) AS usd, SUM(COALESCE(charged_tokens, reserved_tokens)) AS tokens FROM swarms",
      )
      .one();
    return { usd: row.usd ?? 0, tokens: row.tokens ?? 0 };
  }
}
