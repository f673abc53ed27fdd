// Which tenants and keys a caller may see: an operator (an admin key of the default tenant) sees
// every one; any other admin key only its own tenant and that tenant's keys. What a caller may not
// see is "not found", never "forbidden": another tenant's existence is not its business.
import type { Context } from "hono";
import { ApiError } from "../../src/core/errors.ts";
import { isKeyId, isTenantId } from "../../src/core/ids.ts";
import type { AppEnv } from "./app-env.ts";
import type { ApiKeyRecord } from "./key-store.ts";
import type { Tenant } from "./tenant-store.ts";

export const tenantNotFound = (): ApiError => new ApiError("not_found", "tenant not found");
export const keyNotFound = (): ApiError => new ApiError("not_found", "API key not found");

export function canSeeTenant(c: Context<AppEnv>, tenantId: string): boolean {
  return c.var.caller.operator || c.var.caller.tenant === tenantId;
}

/** A live tenant the caller may see, else 404. */
export async function requireVisibleTenant(c: Context<AppEnv>, tenantId: string): Promise<Tenant> {
  if (!isTenantId(tenantId) || !canSeeTenant(c, tenantId)) throw tenantNotFound();
  const tenant = await c.var.deps.tenants.get(tenantId);
  if (tenant === null) throw tenantNotFound();
  return tenant;
}

/** A key the caller may see (revoked ones included), else 404. */
export async function requireVisibleKey(c: Context<AppEnv>, keyId: string): Promise<ApiKeyRecord> {
  if (!isKeyId(keyId)) throw keyNotFound();
  const key = await c.var.deps.keys.get(keyId);
  if (key === null || !canSeeTenant(c, key.tenantId)) throw keyNotFound();
  return key;
}

/** Creating, changing and deleting tenants is the operator's: a tenant's admin must not raise its own limits. */
export function requireOperator(c: Context<AppEnv>, what: string): void {
  if (!c.var.caller.operator) throw new ApiError("forbidden", `only an admin key of the default tenant may ${what}`);
}
