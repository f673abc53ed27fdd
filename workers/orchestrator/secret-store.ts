// D1 `tenant_secrets` (migration 0005_secrets.sql): each tenant's secrets as ciphertext. Takes only
// the D1 database; never sees a value in plain text (the routes seal it first, src/secrets/secret-box.ts).
import { z } from "zod";
import type { SealedSecret } from "../../src/core/tenant-secrets.ts";

export interface SecretRecord {
  name: string;
  createdAt: number;
  updatedAt: number;
}

export interface SecretStore {
  /** Writes the secret (a new one, or a new value of an existing one); returns its dates. */
  put(tenant: string, name: string, sealed: SealedSecret, now: number): Promise<SecretRecord>;
  list(tenant: string): Promise<SecretRecord[]>;
  /** The ciphertext of one secret; null when the tenant has none of that name. */
  get(tenant: string, name: string): Promise<SealedSecret | null>;
  /** Whether there was one to delete. */
  delete(tenant: string, name: string): Promise<boolean>;
}

const RecordRowSchema = z.object({ name: z.string(), created_at: z.number(), updated_at: z.number() });
const SealedRowSchema = z.object({ iv: z.string(), ciphertext: z.string() });

export function createSecretStore(db: D1Database): SecretStore {
  return {
    put: async (tenant, name, sealed, now) => {
      const row = await db
        .prepare(
          `INSERT INTO tenant_secrets (tenant_id, name, iv, ciphertext, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (tenant_id, name) DO UPDATE SET iv = excluded.iv, ciphertext = excluded.ciphertext, updated_at = excluded.updated_at
           RETURNING name, created_at, updated_at`,
        )
        .bind(tenant, name, sealed.iv, sealed.ciphertext, now, now)
        .first();
      const record = RecordRowSchema.parse(row);
      return { name: record.name, createdAt: record.created_at, updatedAt: record.updated_at };
    },
    list: async (tenant) => {
      const { results } = await db.prepare("SELECT name, created_at, updated_at FROM tenant_secrets WHERE tenant_id = ? ORDER BY name").bind(tenant).all();
      return results.map((row) => {
        const record = RecordRowSchema.parse(row);
        return { name: record.name, createdAt: record.created_at, updatedAt: record.updated_at };
      });
    },
    get: async (tenant, name) => {
      const row = await db.prepare("SELECT iv, ciphertext FROM tenant_secrets WHERE tenant_id = ? AND name = ?").bind(tenant, name).first();
      return row === null ? null : SealedRowSchema.parse(row);
    },
    delete: async (tenant, name) => {
      const result = await db.prepare("DELETE FROM tenant_secrets WHERE tenant_id = ? AND name = ?").bind(tenant, name).run();
      return result.meta.changes > 0;
    },
  };
}
