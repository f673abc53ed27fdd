// The D1 `api_keys` table: tenant API keys as their SHA-256 digest and public prefix, never the key.
// Takes only the D1 database. Auth reads a key (with its tenant) on every request, so a revoke or
// a tenant's deletion is effective on the very next request: nothing here is cached.
import { z } from "zod";
import { SCOPES, type Scope } from "../../src/core/api-scopes.ts";
import { TenantLimitsSchema, type TenantLimits } from "../../src/core/tenant-limits.ts";

export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  name: string;
  scopes: Scope[];
  prefix: string;
  rpm: number | null;
  /** Epoch ms; null = never. */
  expiresAt: number | null;
  createdAt: number;
  rotatedAt: number | null;
  revokedAt: number | null;
}

/** A key as auth sees it: the digest to compare, and its tenant's limits (null: the tenant is deleted). */
export interface KeyLookup {
  key: ApiKeyRecord;
  secretHash: string;
  tenantLimits: TenantLimits | null;
}

export interface KeyStore {
  insert(key: ApiKeyRecord, secretHash: string): Promise<void>;
  findByPrefix(prefix: string): Promise<KeyLookup | null>;
  get(id: string): Promise<ApiKeyRecord | null>;
  /** Every key of the tenant (null: of every tenant), newest first, revoked ones included. */
  list(tenantId: string | null): Promise<ApiKeyRecord[]>;
  /** false when the key does not exist or is already revoked. */
  revoke(id: string, at: number): Promise<boolean>;
  /** Replaces the key's secret; false when the key does not exist or is revoked. */
  rotate(id: string, secret: { prefix: string; secretHash: string }, at: number): Promise<boolean>;
}

const KeyRowSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  name: z.string(),
  scopes: z.string(),
  prefix: z.string(),
  rpm: z.number().nullable(),
  expires_at: z.number().nullable(),
  created_at: z.number(),
  rotated_at: z.number().nullable(),
  revoked_at: z.number().nullable(),
});

const COLUMNS = "k.id, k.tenant_id, k.name, k.scopes, k.prefix, k.rpm, k.expires_at, k.created_at, k.rotated_at, k.revoked_at";

function toRecord(row: z.infer<typeof KeyRowSchema>): ApiKeyRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    scopes: z.array(z.enum(SCOPES)).parse(JSON.parse(row.scopes)),
    prefix: row.prefix,
    rpm: row.rpm,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    rotatedAt: row.rotated_at,
    revokedAt: row.revoked_at,
  };
}

export function createKeyStore(db: D1Database): KeyStore {
  return {
    async insert(key, secretHash) {
      await db
        .prepare(
          "INSERT INTO api_keys (id, tenant_id, name, scopes, prefix, secret_hash, rpm, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .bind(key.id, key.tenantId, key.name, JSON.stringify(key.scopes), key.prefix, secretHash, key.rpm, key.expiresAt, key.createdAt)
        .run();
    },
    async findByPrefix(prefix) {
      // Bound parameters only: the presented text never becomes SQL (LiteLLM's CVE-2026-42208 was a key check that did).
      const row = await db
        .prepare(
          `SELECT ${COLUMNS}, k.secret_hash, t.limits AS tenant_limits, t.deleted_at AS tenant_deleted_at ` +
            "FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.prefix = ?1",
        )
        .bind(prefix)
        .first();
      if (row === null) return null;
      const parsed = KeyRowSchema.extend({ secret_hash: z.string(), tenant_limits: z.string(), tenant_deleted_at: z.number().nullable() }).parse(row);
      return {
        key: toRecord(parsed),
        secretHash: parsed.secret_hash,
        tenantLimits: parsed.tenant_deleted_at === null ? TenantLimitsSchema.parse(JSON.parse(parsed.tenant_limits)) : null,
      };
    },
    async get(id) {
      const row = await db.prepare(`SELECT ${COLUMNS} FROM api_keys k WHERE k.id = ?1`).bind(id).first();
      return row === null ? null : toRecord(KeyRowSchema.parse(row));
    },
    async list(tenantId) {
      const statement =
        tenantId === null
          ? db.prepare(`SELECT ${COLUMNS} FROM api_keys k ORDER BY k.created_at DESC, k.id DESC`)
          : db.prepare(`SELECT ${COLUMNS} FROM api_keys k WHERE k.tenant_id = ?1 ORDER BY k.created_at DESC, k.id DESC`).bind(tenantId);
      const { results } = await statement.all();
      return z.array(KeyRowSchema).parse(results).map(toRecord);
    },
    async revoke(id, at) {
      const result = await db.prepare("UPDATE api_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL").bind(id, at).run();
      return result.meta.changes > 0;
    },
    async rotate(id, secret, at) {
      const result = await db
        .prepare("UPDATE api_keys SET prefix = ?2, secret_hash = ?3, rotated_at = ?4 WHERE id = ?1 AND revoked_at IS NULL")
        .bind(id, secret.prefix, secret.secretHash, at)
        .run();
      return result.meta.changes > 0;
    },
  };
}
