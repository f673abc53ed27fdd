// Bearer auth for /v1/*: finds who is calling — a tenant API key (D1, by its prefix, compared by
// SHA-256 digest) or a token of the API_TOKENS secret (an admin key of the default tenant) — and
// sets `caller`. Read from D1 on every request, never cached, so a revoke holds on the next request.
// Presented secrets are never logged, echoed or stored.
import { createMiddleware } from "hono/factory";
import { hashApiKey, toEnvTokenKeyId, toKeyPrefix } from "../../src/core/api-key.ts";
import { ApiError } from "../../src/core/errors.ts";
import { DEFAULT_TENANT_ID } from "../../src/core/ids.ts";
import type { AppEnv, Caller } from "./app-env.ts";
import type { OrchestratorDeps } from "./composition.ts";

const encoder = new TextEncoder();

/** Equal-length digests compared in constant time, so timing says nothing about the stored one. */
function digestsEqual(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  return left.byteLength === right.byteLength && crypto.subtle.timingSafeEqual(left, right);
}

/** The token of `Authorization: Bearer <token>` (scheme case-insensitive, RFC 6750), else null. */
function parseBearer(header: string | undefined): string | null {
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header ?? "");
  return match?.[1] ?? null;
}

const refuse = (message: string): ApiError => new ApiError("unauthorized", message);

async function authenticateTenantKey(deps: OrchestratorDeps, presented: string, prefix: string): Promise<Caller> {
  const found = await deps.keys.findByPrefix(prefix);
  const digest = await hashApiKey(presented);
  if (found === null || !digestsEqual(digest, found.secretHash)) throw refuse("unknown API key");
  const { key, tenantLimits } = found;
  if (key.revokedAt !== null || tenantLimits === null) throw refuse("this API key has been revoked");
  if (key.expiresAt !== null && key.expiresAt <= deps.now()) throw refuse("this API key has expired");
  return {
    tenant: key.tenantId,
    keyId: key.id,
    scopes: key.scopes,
    limits: tenantLimits,
    keyRpm: key.rpm,
    operator: key.tenantId === DEFAULT_TENANT_ID && key.scopes.includes("admin"),
  };
}

async function authenticateEnvToken(deps: OrchestratorDeps, presented: string): Promise<Caller> {
  const tokens = deps.config.apiTokens;
  // Fail closed: without the secret no token matches (tenant keys still work); the operator is told in the log.
  if (tokens.length === 0) console.error("API_TOKENS is empty or unset: only tenant API keys are accepted");
  // Against every configured token without stopping at a match, so the response time says nothing about them.
  const digest = await hashApiKey(presented);
  let matched = false;
  for (const stored of await deps.apiTokenDigests()) matched = digestsEqual(digest, stored) || matched;
  if (!matched) throw refuse("unknown API key");
  const tenant = await deps.tenants.get(DEFAULT_TENANT_ID);
  return { tenant: DEFAULT_TENANT_ID, keyId: toEnvTokenKeyId(digest), scopes: ["admin"], limits: tenant?.limits ?? {}, keyRpm: null, operator: true };
}

export function bearerAuth() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const header = c.req.header("authorization");
    if (header === undefined) throw refuse("missing Authorization header (expected: Bearer <key>)");
    const presented = parseBearer(header);
    if (presented === null) throw refuse("Authorization must use the Bearer scheme");
    const prefix = toKeyPrefix(presented);
    const caller = prefix === null ? await authenticateEnvToken(c.var.deps, presented) : await authenticateTenantKey(c.var.deps, presented, prefix);
    c.set("caller", caller);
    c.set("tenant", caller.tenant);
    await next();
  });
}

/**
 * Whether the caller's key still opens the API (not revoked or expired, its tenant not deleted):
 * asked again by long-lived answers (the event stream) so a revoke ends them too. An API_TOKENS
 * token lives as long as the secret, which a running isolate cannot see change: always true.
 */
export async function isCallerStillValid(deps: Pick<OrchestratorDeps, "keys" | "tenants" | "now">, caller: Caller): Promise<boolean> {
  if (caller.keyId.startsWith("key_env_")) return true;
  const key = await deps.keys.get(caller.keyId);
  if (key === null || key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= deps.now())) return false;
  return (await deps.tenants.get(key.tenantId)) !== null;
}
