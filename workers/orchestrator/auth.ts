// Bearer auth for /v1/*: maps a token from the API_TOKENS secret to its tenant id.
// Tokens are compared as SHA-256 digests in constant time, and are never logged or echoed.
import { createMiddleware } from "hono/factory";
import { ApiError } from "../../src/core/errors.ts";
import { toTenantIdFromDigest } from "../../src/core/tenant-id.ts";
import type { AppEnv } from "./app-env.ts";

const encoder = new TextEncoder();

async function sha256(text: string): Promise<ArrayBuffer> {
  return crypto.subtle.digest("SHA-256", encoder.encode(text));
}

/** The tenant of a token: `tk_` + the first 16 hex chars of its SHA-256 (never the token itself). */
export { toTenantId } from "../../src/core/tenant-id.ts";

/** The token of `Authorization: Bearer <token>` (scheme case-insensitive, RFC 6750), else null. */
function parseBearer(header: string | undefined): string | null {
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header ?? "");
  return match?.[1] ?? null;
}

export function bearerAuth() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const tokens = c.var.deps.config.apiTokens;
    if (tokens.length === 0) {
      // Fail closed: a deploy without the secret must not become an open API.
      console.error("API_TOKENS is empty or unset: refusing every /v1 request");
      throw new ApiError("internal", "the server has no API tokens configured");
    }
    const header = c.req.header("authorization");
    if (header === undefined) throw new ApiError("unauthorized", "missing Authorization header (expected: Bearer <token>)");
    const presented = parseBearer(header);
    if (presented === null) throw new ApiError("unauthorized", "Authorization must use the Bearer scheme");

    // Equal-length digests compared with timingSafeEqual, against every configured token without
    // stopping at a match, so the response time says nothing about the tokens.
    const digest = await sha256(presented);
    let matched = false;
    for (const token of tokens) {
      const equal = crypto.subtle.timingSafeEqual(digest, await sha256(token));
      matched = matched || equal;
    }
    if (!matched) throw new ApiError("unauthorized", "unknown API token");
    c.set("tenant", toTenantIdFromDigest(digest));
    await next();
  });
}
