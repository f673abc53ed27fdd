// API requests a minute on /v1/*: the tenant's rpm (all of its keys together) and the key's own,
// counted by the tenant's TenantLimiter Durable Object, never in this isolate. Over either: 429
// rate_limited with Retry-After. A caller with neither limit costs no Durable Object round trip.
import { createMiddleware } from "hono/factory";
import { ApiError } from "../../src/core/errors.ts";
import type { AppEnv } from "./app-env.ts";

export function limitRequestRate() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const { caller, deps } = c.var;
    const limits: { name: string; rpm: number }[] = [];
    if (caller.limits.rpm !== undefined) limits.push({ name: "tenant", rpm: caller.limits.rpm });
    if (caller.keyRpm !== null) limits.push({ name: `key:${caller.keyId}`, rpm: caller.keyRpm });
    if (limits.length > 0) {
      const answer = await deps.rateLimiter.take(caller.tenant, limits);
      if (!answer.admitted) {
        const which = limits.map((l) => `${l.name === "tenant" ? "tenant" : "key"} rpm ${l.rpm}`).join(", ");
        throw new ApiError("rate_limited", `too many requests (${which}); retry after ${answer.retryAfterS} s`, [], { retryAfterS: answer.retryAfterS });
      }
    }
    await next();
  });
}
