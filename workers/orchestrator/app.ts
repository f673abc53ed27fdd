// The orchestrator's HTTP app: middleware order, sub-app mounting, and the one error mapping.
// Every response that is not a success is JSON `{ error: { code, message, details, request_id } }`.
import { secretRoutes } from "./routes/secrets.ts";
import { Hono, type Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { ApiError, toErrorBody, toHttpStatus, type ApiErrorCode } from "../../src/core/errors.ts";
import type { AppEnv } from "./app-env.ts";
import { bearerAuth } from "./auth.ts";
import { limitBodySize } from "./body-size-limit.ts";
import { composeDeps } from "./composition.ts";
import { limitRequestRate } from "./rate-limit.ts";
import { requireScope } from "./require-scope.ts";
import { auditRoutes } from "./routes/audit.ts";
import { keyRoutes } from "./routes/keys.ts";
import { meRoutes } from "./routes/me.ts";
import { tenantRoutes } from "./routes/tenants.ts";
import { buildOpenApiDocument } from "./openapi-document.ts";
import { batchRoutes } from "./routes/batches.ts";
import { fileRoutes } from "./routes/files.ts";
import { scheduleRoutes } from "./routes/schedules.ts";
import { swarmRoutes } from "./routes/swarms.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import { usageRoutes } from "./routes/usage.ts";

/** Hono raises HTTPException for some protocol errors of its own; they keep their status class. */
function toErrorCode(status: number): ApiErrorCode {
  switch (status) {
    case 400:
      return "invalid_request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 413:
      return "payload_too_large";
    case 415:
      return "unsupported_media_type";
    default:
      return "internal";
  }
}

function respondWithError(c: Context<AppEnv>, code: ApiErrorCode, message: string, details: ApiError["details"] = [], retryAfterS?: number): Response {
  // RFC 6750: a 401 for a bearer-protected resource names the scheme.
  if (code === "unauthorized") c.header("WWW-Authenticate", 'Bearer realm="edgeswarm"');
  if (retryAfterS !== undefined) c.header("Retry-After", String(retryAfterS));
  return c.json(toErrorBody(code, message, details, c.var.requestId), toHttpStatus(code));
}

export function createApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Clients may pass their own id (to correlate logs); anything odd in it is replaced.
  app.use(requestId({ limitLength: 128 }));

  app.get("/healthz", (c) => c.json({ ok: true, service: "edgeswarm-orchestrator" }));
  // The API's description is public, like the dashboard's page; every data call takes the token.
  app.get("/openapi.json", (c) => c.json(buildOpenApiDocument()));

  app.use("/v1/*", async (c, next) => {
    c.set("deps", composeDeps(c.env));
    await next();
  });
  // Who is calling, then their rate (so refused scopes count too), then what the route needs.
  app.use("/v1/*", bearerAuth());
  app.use("/v1/*", limitRequestRate());
  app.use("/v1/*", requireScope());
  app.use("/v1/*", limitBodySize());
  app.route("/v1/swarms", swarmRoutes);
  app.route("/v1/schedules", scheduleRoutes);
  app.route("/v1/files", fileRoutes);
  app.route("/v1/batches", batchRoutes);
  app.route("/v1/usage", usageRoutes);
  app.route("/v1/webhooks", webhookRoutes);
  app.route("/v1/tenants", tenantRoutes);
  app.route("/v1/keys", keyRoutes);
  app.route("/v1/me", meRoutes);
  app.route("/v1/audit", auditRoutes);
  app.route("/v1/secrets", secretRoutes);

  app.notFound((c) => respondWithError(c, "not_found", `no route for ${c.req.method} ${c.req.path}`));

  app.onError((error, c) => {
    if (error instanceof ApiError) return respondWithError(c, error.code, error.message, error.details, error.retryAfterS);
    if (error instanceof HTTPException && error.status < 500) {
      return respondWithError(c, toErrorCode(error.status), error.message || "request refused");
    }
    // Internals (stack, binding errors, SQL) go to the log under the request id, never to the client.
    console.error(`[${c.var.requestId}] unhandled error on ${c.req.method} ${c.req.path}`, error);
    return respondWithError(c, "internal", "internal error; quote the request id when reporting it");
  });
  return app;
}
