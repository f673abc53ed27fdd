// Middleware for the POSTs that start something: with an `Idempotency-Key` header, the first
// request with the key runs and its answer is kept 24 h per tenant; the same key with the same
// request gets that answer again (`Idempotent-Replayed: true`), with another request 409. A retry
// after a timeout therefore starts nothing twice. Without the header, nothing changes.
import { createMiddleware } from "hono/factory";
import { ApiError } from "../../src/core/errors.ts";
import {
  decideIdempotentReplay,
  isReplayableStatus,
  parseIdempotencyKey,
  toFingerprintInput,
  toIdempotentSwarmIdInput,
} from "../../src/core/idempotency-key.ts";
import { toSwarmId } from "../../src/core/ids.ts";
import { sha256, sha256Hex } from "../../src/core/sha256.ts";
import type { AppEnv } from "./app-env.ts";

/** The swarm id a keyed POST /v1/swarms starts (the same for every request with the key). */
export async function toKeyedSwarmId(tenant: string, key: string): Promise<string> {
  return toSwarmId(await sha256(toIdempotentSwarmIdInput(tenant, key)));
}

export function idempotent() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const header = c.req.header("idempotency-key");
    if (header === undefined) return next();
    const key = parseIdempotencyKey(header);
    if (!key.ok) {
      throw new ApiError("invalid_request", "the Idempotency-Key header is invalid", [{ path: "headers.idempotency-key", message: key.error }]);
    }
    const { tenant, deps } = c.var;
    const url = new URL(c.req.url);
    // Hono keeps the body it read, so the handler reads the same text again.
    const body = await c.req.text();
    const fingerprint = await sha256Hex(toFingerprintInput({ method: c.req.method, path: url.pathname, search: url.search, body }));
    const claim = await deps.idempotency.claim(tenant, key.value, fingerprint, deps.now());

    if (claim.kind === "existing") {
      const decision = decideIdempotentReplay(claim.record, fingerprint);
      if (decision.kind === "mismatch") {
        throw new ApiError("conflict", "this Idempotency-Key was used for a different request", [
          { path: "headers.idempotency-key", message: "keys are kept 24 h per tenant; use a new key for a new request" },
        ]);
      }
      if (decision.kind === "in_progress") {
        c.header("Retry-After", "1");
        throw new ApiError("conflict", "the first request with this Idempotency-Key is still running; retry shortly", [
          { path: "headers.idempotency-key", message: "in progress" },
        ]);
      }
      const headers = new Headers({ "content-type": "application/json", "idempotent-replayed": "true" });
      if (claim.record.location !== null) headers.set("location", claim.record.location);
      return new Response(claim.record.response, { status: claim.record.status ?? 200, headers });
    }

    c.set("idempotencyKey", key.value);
    try {
      await next();
    } catch (error) {
      await deps.idempotency.release(tenant, key.value);
      throw error;
    }
    // Hono turns a handler's error into c.res (app.onError) before control comes back here.
    const response = c.res;
    if (isReplayableStatus(response.status)) {
      await deps.idempotency.complete(tenant, key.value, {
        status: response.status,
        body: await response.clone().text(),
        location: response.headers.get("location"),
      });
    } else {
      await deps.idempotency.release(tenant, key.value);
    }
  });
}
