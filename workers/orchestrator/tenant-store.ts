// The D1 `tenants` table: who may run swarms here, and the limits all of a tenant's keys share.
// Takes only the D1 database. A deleted tenant keeps its row (swarms and ledger rows name it) with
// `deleted_at` set, and every read here skips it; its keys are revoked in the same batch.
import { z } from "zod";
import { TenantLimitsSchema, type TenantLimits } from "../../src/core/tenant-limits.ts";

export interface Tenant {
  id: string;
  name: string;
  limits: TenantLimits;
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
}

export interface TenantStore {
  get(id: string): Promise<Tenant | null>;
  list(): Promise<Tenant[]>;
  insert(tenant: Tenant): Promise<void>;
  /** false when no live tenant has that id. */
  update(id: string, change: { name: string; limits: TenantLimits; updatedAt: number }): Promise<boolean>;
  /** Marks the tenant deleted and revokes its live keys; false when no live tenant has that id. */
  delete(id: string, at: number): Promise<boolean>;
  /** USD on the tenant's ledger rows since `since` (epoch ms). */
  spentSince(id: string, since: number): Promise<number>;
}

const TenantRowSchema = z.object({
  id: z.string(),
  name: z.string(),
  limits: z.string(),
  created_at: z.number(),
  updated_at: z.number(),
});

/** A stored limits object that no longer parses is a bug or a hand edit: loud, not silently unlimited. */
function toTenant(row: z.infer<typeof TenantRowSchema>): Tenant {
  return { id: row.id, name: row.name, limits: TenantLimitsSchema.parse(JSON.parse(row.limits)), createdAt: row.created_at, updatedAt: row.updated_at };
}

const COLUMNS = "id, name, limits, created_at, updated_at";

export function createTenantStore(db: D1Database): TenantStore {
  return {
    async get(id) {
      const row = await db.prepare(`SELECT ${COLUMNS} FROM tenants WHERE id = ?1 AND deleted_at IS NULL`).bind(id).first();
      return row === null ? null : toTenant(TenantRowSchema.parse(row));
    },
    async list() {
      const { results } = await db.prepare(`SELECT ${COLUMNS} FROM tenants WHERE deleted_at IS NULL ORDER BY created_at, id`).all();
      return z.array(TenantRowSchema).parse(results).map(toTenant);
    },
    async insert(tenant) {
      await db
        .prepare("INSERT INTO tenants (id, name, limits, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)")
        .bind(tenant.id, tenant.name, JSON.stringify(tenant.limits), tenant.createdAt, tenant.updatedAt)
        .run();
    },
    async update(id, change) {
      const result = await db
        .prepare("UPDATE tenants SET name = ?2, limits = ?3, updated_at = ?4 WHERE id = ?1 AND deleted_at IS NULL")
        .bind(id, change.name, JSON.stringify(change.limits), change.updatedAt)
        .run();
      return result.meta.changes > 0;
    },
    async spentSince(id, since) {
      const row = await db
        .prepare("SELECT SUM(cost_usd) AS usd FROM ledger WHERE tenant = ?1 AND created_at >= ?2")
        .bind(id, since)
        .first<{ usd: number | null }>();
      return row?.usd ?? 0;
    },
    async delete(id, at) {
      const [tenant] = await db.batch([
        db.prepare("UPDATE tenants SET deleted_at = ?2 WHERE id = ?1 AND deleted_at IS NULL").bind(id, at),
        db.prepare("UPDATE api_keys SET revoked_at = ?2 WHERE tenant_id = ?1 AND revoked_at IS NULL").bind(id, at),
      ]);
      return (tenant?.meta.changes ?? 0) > 0;
    },
  };
}
