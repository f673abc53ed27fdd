// The orchestrator's door to TenantLimiter Durable Objects (one per tenant, named by the tenant id).
// Takes only the TENANT_LIMITER namespace.
import type { RateLimitAnswer, TenantLimiter } from "../../src/durable/tenant-limiter.ts";

export interface RateLimiter {
  take(tenant: string, limits: { name: string; rpm: number }[]): Promise<RateLimitAnswer>;
}

export function createRateLimiter(namespace: DurableObjectNamespace<TenantLimiter>): RateLimiter {
  return {
    take: (tenant, limits) => namespace.get(namespace.idFromName(tenant)).take({ limits }),
  };
}
