// The public JSON of tenants, keys and audit events: ISO times, snake_case, never a key's secret or digest.
import type { AuditEvent } from "./audit-store.ts";
import type { ApiKeyRecord } from "./key-store.ts";
import type { Tenant } from "./tenant-store.ts";

const toIso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function toTenantView(tenant: Tenant) {
  return { id: tenant.id, name: tenant.name, limits: tenant.limits, created_at: toIso(tenant.createdAt), updated_at: toIso(tenant.updatedAt) };
}

export function toKeyView(key: ApiKeyRecord) {
  return {
    id: key.id,
    tenant_id: key.tenantId,
    name: key.name,
    scopes: key.scopes,
    prefix: key.prefix,
    rpm: key.rpm,
    expires_at: toIso(key.expiresAt),
    created_at: toIso(key.createdAt),
    rotated_at: toIso(key.rotatedAt),
    revoked_at: toIso(key.revokedAt),
  };
}

export function toAuditView(event: AuditEvent) {
  return {
    id: event.id,
    created_at: toIso(event.createdAt),
    tenant_id: event.tenantId,
    key_id: event.actorKeyId,
    action: event.action,
    target_id: event.targetId,
    request_id: event.requestId,
    details: event.details,
  };
}
