// TenantLimiter: one SQLite-backed Durable Object per tenant, the single authority on its API
// request rate — the tenant's rpm (shared by all of its keys) and each key's own rpm. A Worker
// isolate's memory would count per isolate and per location; this object counts once, for all.
// The bucket maths is src/core/request-rate.ts; this class only keeps the buckets.
import { DurableObject } from "cloudflare:workers";
import { takeRequest, type RateBucket } from "../core/request-rate.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS buckets (
  name    TEXT PRIMARY KEY,
  tokens  REAL NOT NULL,
  at      INTEGER NOT NULL
);
`;

export interface RateLimitRequest {
  /** `tenant` for the tenant's limit, `key:<key id>` for a key's own. */
  limits: { name: string; rpm: number }[];
}

export type RateLimitAnswer = { admitted: true } | { admitted: false; retryAfterS: number };

export class TenantLimiter extends DurableObject<unknown> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(SCHEMA);
  }

  /** One API request against all of `limits` at once: taken from every bucket, or from none. */
  async take(request: RateLimitRequest): Promise<RateLimitAnswer> {
    const now = Date.now();
    const limits = request.limits.map(({ name, rpm }) => ({ name, rpm, bucket: this.readBucket(name) }));
    const decision = takeRequest(limits, now);
    if (!decision.admit) return { admitted: false, retryAfterS: decision.retryAfterS };
    decision.buckets.forEach((bucket, i) => {
      const name = limits[i]?.name;
      if (name !== undefined) {
        this.sql.exec(
          "INSERT INTO buckets (name, tokens, at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET tokens = excluded.tokens, at = excluded.at",
          name,
          bucket.tokens,
          bucket.at,
        );
      }
    });
    return { admitted: true };
  }

  private readBucket(name: string): RateBucket | null {
    return this.sql.exec<{ tokens: number; at: number }>("SELECT tokens, at FROM buckets WHERE name = ?", name).toArray()[0] ?? null;
  }
}
