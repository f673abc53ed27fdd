// KeyPool: one SQLite-backed Durable Object per upstream API key, the single authority on that
// key's budget (not per isolate, not per location): a sliding-window log of admitted calls for
// RPM/TPM, calls in flight, a cooldown after a 429, a quarantine after 401/403/insufficient_quota.
// Sharded by key id, so keys never queue behind each other. It knows nothing of swarms.
import { DurableObject } from "cloudflare:workers";
import { decideAdmission, WINDOW_MS, type Admission } from "../core/key-admission.ts";
import type { AcquireRequest, AcquireResponse, KeyPoolStatus, ReleaseRequest } from "../core/key-pool-contract.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS admissions (
  permit_id  TEXT PRIMARY KEY,
  at         INTEGER NOT NULL,
  tokens     INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  released   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS admissions_by_time ON admissions (at);
CREATE TABLE IF NOT EXISTS health (
  id                INTEGER PRIMARY KEY CHECK (id = 1),
  cooldown_until    INTEGER,
  quarantined_since INTEGER,
  quarantine_reason TEXT
);
INSERT OR IGNORE INTO health (id) VALUES (1);
`;

/** A 429 without Retry-After cools the key down this long. */
const DEFAULT_COOLDOWN_MS = 1_000;

type AdmissionRow = { at: number; tokens: number };
type HealthRow = { cooldown_until: number | null; quarantined_since: number | null; quarantine_reason: string | null };

export class KeyPool extends DurableObject<unknown> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(SCHEMA);
  }

  /** Grants a permit when the key has headroom for the call now; otherwise says when it will. */
  async acquire(request: AcquireRequest): Promise<AcquireResponse> {
    const now = Date.now();
    this.forget(now);
    const health = this.health();
    const window = this.sql.exec<AdmissionRow>("SELECT at, tokens FROM admissions WHERE at > ? ORDER BY at", now - WINDOW_MS).toArray();
    const inFlight = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM admissions WHERE released = 0 AND expires_at > ?", now).one().n;
    const decision = decideAdmission(
      request.limits,
      { cooldownUntil: health.cooldown_until, quarantined: health.quarantined_since !== null, inFlight },
      window satisfies Admission[],
      Math.max(0, Math.ceil(request.tokens)),
      now,
    );
    if (!("admit" in decision)) return decision;
    const permitId = crypto.randomUUID();
    this.sql.exec(
      "INSERT INTO admissions (permit_id, at, tokens, expires_at) VALUES (?, ?, ?, ?)",
      permitId,
      now,
      Math.max(0, Math.ceil(request.tokens)),
      now + Math.max(1_000, request.leaseMs),
    );
    return { granted: true, permitId };
  }

  /** Ends a permit: settles its tokens to what the call used and applies what the upstream said. Idempotent. */
  async release(request: ReleaseRequest): Promise<void> {
    const now = Date.now();
    const updated = this.sql.exec(
      "UPDATE admissions SET released = 1, tokens = COALESCE(?, tokens) WHERE permit_id = ? AND released = 0",
      request.tokens === null ? null : Math.max(0, Math.round(request.tokens)),
      request.permitId,
    ).rowsWritten;
    if (updated === 0) return;
    switch (request.outcome) {
      case "rate_limited": {
        const until = now + Math.max(0, request.retryAfterMs ?? DEFAULT_COOLDOWN_MS);
        this.sql.exec("UPDATE health SET cooldown_until = MAX(COALESCE(cooldown_until, 0), ?)", until);
        break;
      }
      case "key_rejected":
        this.sql.exec(
          "UPDATE health SET quarantined_since = COALESCE(quarantined_since, ?), quarantine_reason = COALESCE(quarantine_reason, ?)",
          now,
          "the upstream rejected the key (401/403/insufficient_quota)",
        );
        console.warn(JSON.stringify({ event: "key_quarantined" }));
        break;
      case "ok":
      case "error":
        break;
    }
  }

  async status(): Promise<KeyPoolStatus> {
    const now = Date.now();
    this.forget(now);
    const window = this.sql
      .exec<{ n: number; tokens: number | null }>("SELECT COUNT(*) AS n, SUM(tokens) AS tokens FROM admissions WHERE at > ?", now - WINDOW_MS)
      .one();
    const inFlight = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM admissions WHERE released = 0 AND expires_at > ?", now).one().n;
    const health = this.health();
    return {
      inFlight,
      requestsLastMinute: window.n,
      tokensLastMinute: window.tokens ?? 0,
      cooldownUntil: health.cooldown_until !== null && health.cooldown_until > now ? health.cooldown_until : null,
      quarantined: health.quarantined_since === null ? null : { since: health.quarantined_since, reason: health.quarantine_reason ?? "" },
    };
  }

  /** An operator put the key right (rotated, topped up): take it back into service. */
  async clearQuarantine(): Promise<void> {
    this.sql.exec("UPDATE health SET quarantined_since = NULL, quarantine_reason = NULL");
  }

  private health(): HealthRow {
    return this.sql.exec<HealthRow>("SELECT cooldown_until, quarantined_since, quarantine_reason FROM health WHERE id = 1").one();
  }

  /** Admissions older than the window and already released (or expired) no longer count for anything. */
  private forget(now: number): void {
    this.sql.exec("DELETE FROM admissions WHERE at <= ? AND (released = 1 OR expires_at <= ?)", now - WINDOW_MS, now);
  }
}
