// The D1 `audit_log` table: who (key id) did what to which key, tenant or swarm, when, and from which
// request. Takes only the D1 database. Rows carry ids, names and scopes, never a key or a body.
import { z } from "zod";

export const AUDIT_ACTIONS = [
  "key.created",
  "key.rotated",
  "key.revoked",
  "tenant.created",
  "tenant.updated",
  "tenant.deleted",
  "swarm.started",
  "swarm.cancelled",
  "swarm.rerun",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEvent {
  id: string;
  tenantId: string;
  /** null: cron started it. */
  actorKeyId: string | null;
  action: AuditAction;
  targetId: string;
  requestId: string | null;
  details: Record<string, string | number | boolean | null | string[]>;
  /** Epoch ms. */
  createdAt: number;
}

export interface AuditPage {
  events: AuditEvent[];
  /** The id of the last event on the page, when another page may follow. */
  next: string | null;
}

export interface AuditStore {
  record(event: AuditEvent): Promise<void>;
  /** Newest first; `tenantId` null = every tenant; `before` = an event id from a previous page. */
  list(query: { tenantId: string | null; before: string | null; limit: number }): Promise<AuditPage>;
}

const AuditRowSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  actor_key_id: z.string().nullable(),
  action: z.enum(AUDIT_ACTIONS),
  target_id: z.string(),
  request_id: z.string().nullable(),
  details: z.string(),
  created_at: z.number(),
});

const COLUMNS = "id, tenant_id, actor_key_id, action, target_id, request_id, details, created_at";

export function createAuditStore(db: D1Database): AuditStore {
  return {
    async record(event) {
      await db
        .prepare(`INSERT INTO audit_log (${COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`)
        .bind(event.id, event.tenantId, event.actorKeyId, event.action, event.targetId, event.requestId, JSON.stringify(event.details), event.createdAt)
        .run();
    },
    async list({ tenantId, before, limit }) {
      // Audit ids start with their time in hex, so id order is time order (ties broken by the random tail).
      const conditions: string[] = [];
      const params: (string | number)[] = [];
      if (tenantId !== null) {
        params.push(tenantId);
        conditions.push(`tenant_id = ?${params.length}`);
      }
      if (before !== null) {
        params.push(before);
        conditions.push(`id < ?${params.length}`);
      }
      params.push(limit + 1);
      const where = conditions.length > 0 ? `WHERE ${conditions.join(" AND ")}` : "";
      const { results } = await db
        .prepare(`SELECT ${COLUMNS} FROM audit_log ${where} ORDER BY id DESC LIMIT ?${params.length}`)
        .bind(...params)
        .all();
      const rows = z.array(AuditRowSchema).parse(results);
      const page = rows.slice(0, limit).map((row) => ({
        id: row.id,
        tenantId: row.tenant_id,
        actorKeyId: row.actor_key_id,
        action: row.action,
        targetId: row.target_id,
        requestId: row.request_id,
        details: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.string())])).parse(JSON.parse(row.details)),
        createdAt: row.created_at,
      }));
      return { events: page, next: rows.length > limit ? (page.at(-1)?.id ?? null) : null };
    },
  };
}
