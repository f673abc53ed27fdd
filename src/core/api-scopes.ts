// What each route of the API needs: one table of `METHOD path` → scope, the scopes a key may hold,
// and how they rank (admin ⊇ run ⊇ read). No I/O. A route without a row is refused (fail closed),
// and the isolation test fails on it, so a new route cannot ship without saying what it needs.
import { z } from "zod";

export const SCOPES = ["admin", "run", "read"] as const;
export type Scope = (typeof SCOPES)[number];
export const ScopesSchema = z
  .array(z.enum(SCOPES, "must be admin, run or read"))
  .min(1, "give at least one scope")
  .max(3)
  .refine((scopes) => new Set(scopes).size === scopes.length, "scopes must not repeat");

const RANK: Record<Scope, number> = { read: 1, run: 2, admin: 3 };

/**
 * Every route under /v1, as Hono names it (`c.req` route path). `read` = GET only; `run` = start,
 * cancel, rerun, schedules (estimates too: a POST); `admin` = tenants, keys and the audit trail.
 */
export const ROUTE_SCOPES: Readonly<Record<string, Scope>> = {
  "POST /v1/swarms/estimate": "run",
  "POST /v1/swarms": "run",
  "GET /v1/swarms": "read",
  "GET /v1/swarms/:id": "read",
  "GET /v1/swarms/:id/results": "read",
  "GET /v1/swarms/:id/plan": "read",
  "POST /v1/swarms/:id/cancel": "run",
  "GET /v1/swarms/:id/events": "read",
  "GET /v1/swarms/:id/live": "read",
  "GET /v1/swarms/:id/tasks/:task_id": "read",
  "POST /v1/swarms/:id/rerun": "run",
  "POST /v1/schedules": "run",
  "GET /v1/schedules": "read",
  "DELETE /v1/schedules/:id": "run",
  "GET /v1/usage": "read",
  "GET /v1/webhooks/signing-key": "read",
  "GET /v1/me": "read",
  "POST /v1/tenants": "admin",
  "GET /v1/tenants": "admin",
  "GET /v1/tenants/:id": "admin",
  "PATCH /v1/tenants/:id": "admin",
  "DELETE /v1/tenants/:id": "admin",
  "POST /v1/keys": "admin",
  "GET /v1/keys": "admin",
  "DELETE /v1/keys/:id": "admin",
  "POST /v1/keys/:id/rotate": "admin",
  "GET /v1/audit": "admin",
  "PUT /v1/secrets/:name": "run",
  "GET /v1/secrets": "read",
  "DELETE /v1/secrets/:name": "run",
  "POST /v1/files": "run",
  "GET /v1/files": "read",
  "GET /v1/files/:id": "read",
  "GET /v1/files/:id/content": "read",
  "DELETE /v1/files/:id": "run",
  "POST /v1/batches": "run",
  "GET /v1/batches": "read",
  "GET /v1/batches/:id": "read",
  "POST /v1/batches/:id/cancel": "run",
};

/** The scope a route needs; null = the table has no row for it (the caller refuses the request). */
export function toRequiredScope(method: string, routePath: string): Scope | null {
  return ROUTE_SCOPES[`${method.toUpperCase()} ${routePath}`] ?? null;
}

/** Whether a key holding `granted` may use a route that needs `required`. */
export function grantsScope(granted: readonly Scope[], required: Scope): boolean {
  return granted.some((scope) => RANK[scope] >= RANK[required]);
}
