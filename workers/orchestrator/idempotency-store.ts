// D1 `idempotency_keys`: claims a tenant's key for a request, keeps its response 24 h, and gives
// it back. Takes only the D1 database. A claim is one transaction, so two requests with the same
// key never both run.
import { z } from "zod";
import { IDEMPOTENCY_STALE_MS, IDEMPOTENCY_TTL_MS, type IdempotencyRecord } from "../../src/core/idempotency-key.ts";

export interface StoredResponse extends IdempotencyRecord {
  response: string | null;
  location: string | null;
}

export type IdempotencyClaim = { kind: "claimed" } | { kind: "existing"; record: StoredResponse };

export interface IdempotencyStore {
  /** Takes the key for this request, unless a live record of it exists (then that record). */
  claim(tenant: string, key: string, fingerprint: string, now: number): Promise<IdempotencyClaim>;
  /** The claimed request answered: its response is what a retry with the key gets. */
  complete(tenant: string, key: string, response: { status: number; body: string; location: string | null }): Promise<void>;
  /** The claimed request failed (5xx) or threw: the key is free again. */
  release(tenant: string, key: string): Promise<void>;
  /** Drops records past their 24 h (cron); returns how many. */
  purgeExpired(now: number, limit: number): Promise<number>;
}

const RecordRowSchema = z.object({
  fingerprint: z.string(),
  status: z.number().int().nullable(),
  response: z.string().nullable(),
  location: z.string().nullable(),
  created_at: z.number(),
});

export function createIdempotencyStore(db: D1Database): IdempotencyStore {
  return {
    async claim(tenant, key, fingerprint, now) {
      // Expired records go, and so does one whose request died holding it (stale): then insert.
      const [, inserted] = await db.batch([
        db
          .prepare("DELETE FROM idempotency_keys WHERE tenant = ?1 AND key = ?2 AND (expires_at <= ?3 OR (status IS NULL AND created_at <= ?4))")
          .bind(tenant, key, now, now - IDEMPOTENCY_STALE_MS),
        db
          .prepare(
            "INSERT INTO idempotency_keys (tenant, key, fingerprint, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (tenant, key) DO NOTHING",
          )
          .bind(tenant, key, fingerprint, now, now + IDEMPOTENCY_TTL_MS),
      ]);
      if ((inserted?.meta.changes ?? 0) > 0) return { kind: "claimed" };
      const row = await db
        .prepare("SELECT fingerprint, status, response, location, created_at FROM idempotency_keys WHERE tenant = ?1 AND key = ?2")
        .bind(tenant, key)
        .first();
      // Gone between the two statements (released by its request): this one may take it.
      if (row === null) return this.claim(tenant, key, fingerprint, now);
      const record = RecordRowSchema.parse(row);
      return {
        kind: "existing",
        record: { fingerprint: record.fingerprint, status: record.status, createdAt: record.created_at, response: record.response, location: record.location },
      };
    },
    async complete(tenant, key, response) {
      await db
        .prepare("UPDATE idempotency_keys SET status = ?3, response = ?4, location = ?5 WHERE tenant = ?1 AND key = ?2")
        .bind(tenant, key, response.status, response.body, response.location)
        .run();
    },
    async release(tenant, key) {
      await db.prepare("DELETE FROM idempotency_keys WHERE tenant = ?1 AND key = ?2 AND status IS NULL").bind(tenant, key).run();
    },
    async purgeExpired(now, limit) {
      const result = await db
        .prepare("DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE expires_at <= ?1 LIMIT ?2)")
        .bind(now, limit)
        .run();
      return result.meta.changes ?? 0;
    },
  };
}
