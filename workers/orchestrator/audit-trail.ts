// Records an audit event for the current request: the caller's key, the request id, the time.
// The one way handlers and startSwarm write the audit trail, so every row has the same provenance.
import type { Context } from "hono";
import type { AppEnv } from "./app-env.ts";
import type { AuditAction, AuditEvent } from "./audit-store.ts";
import type { OrchestratorDeps } from "./composition.ts";

/** Who acted: the key and the request; null for cron. */
export interface AuditActor {
  keyId: string;
  requestId: string;
}

export async function recordAuditEvent(
  deps: Pick<OrchestratorDeps, "audit" | "newAuditId" | "now">,
  actor: AuditActor | null,
  event: { tenantId: string; action: AuditAction; targetId: string; details?: AuditEvent["details"] },
): Promise<void> {
  await deps.audit.record({
    id: deps.newAuditId(),
    tenantId: event.tenantId,
    actorKeyId: actor?.keyId ?? null,
    action: event.action,
    targetId: event.targetId,
    requestId: actor?.requestId ?? null,
    details: event.details ?? {},
    createdAt: deps.now(),
  });
}

export function toAuditActor(c: Context<AppEnv>): AuditActor {
  return { keyId: c.var.caller.keyId, requestId: c.var.requestId };
}

/** An event of the request's own tenant, by the request's caller. */
export function recordRequestAudit(
  c: Context<AppEnv>,
  event: { action: AuditAction; targetId: string; tenantId?: string; details?: AuditEvent["details"] },
): Promise<void> {
  return recordAuditEvent(c.var.deps, toAuditActor(c), { tenantId: event.tenantId ?? c.var.tenant, ...event });
}
