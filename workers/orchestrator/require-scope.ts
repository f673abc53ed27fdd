// Scope check on /v1/*: the route that will answer is looked up in ROUTE_SCOPES (src/core/api-scopes.ts),
// the one table of what each route needs. A route missing from the table is refused (403), never open.
import { createMiddleware } from "hono/factory";
import { matchedRoutes } from "hono/route";
import { grantsScope, toRequiredScope } from "../../src/core/api-scopes.ts";
import { ApiError } from "../../src/core/errors.ts";
import type { AppEnv } from "./app-env.ts";

export function requireScope() {
  return createMiddleware<AppEnv>(async (c, next) => {
    // Middleware is registered for method ALL; the handler that will answer is the last other match.
    const handler = matchedRoutes(c).findLast((route) => route.method !== "ALL");
    // No handler: the app's notFound answers 404.
    if (handler !== undefined) {
      const required = toRequiredScope(handler.method, handler.path);
      const { scopes } = c.var.caller;
      if (required === null) throw new ApiError("forbidden", "this route has no scope assigned, so no key may use it");
      if (!grantsScope(scopes, required)) {
        throw new ApiError("forbidden", `this route needs the ${required} scope; this API key has ${scopes.join(", ")}`, [
          { path: "scopes", message: `needs ${required}` },
        ]);
      }
    }
    await next();
  });
}
