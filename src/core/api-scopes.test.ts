import { describe, expect, it } from "vitest";
import { grantsScope, ROUTE_SCOPES, ScopesSchema, toRequiredScope, type Scope } from "./api-scopes.ts";

describe("route scopes", () => {
  it.each([
    ["GET", "/v1/swarms/:id", "read"],
    ["get", "/v1/swarms", "read"],
    ["POST", "/v1/swarms", "run"],
    ["POST", "/v1/swarms/:id/cancel", "run"],
    ["DELETE", "/v1/schedules/:id", "run"],
    ["POST", "/v1/keys", "admin"],
    ["GET", "/v1/audit", "admin"],
    ["GET", "/v1/me", "read"],
    ["PUT", "/v1/swarms", null],
    ["GET", "/v1/not-a-route", null],
  ])("%s %s needs %s", (method, path, scope) => {
    expect(toRequiredScope(method, path)).toBe(scope);
  });

  it("lets every GET be read with the read scope, and nothing else", () => {
    for (const [route, scope] of Object.entries(ROUTE_SCOPES)) {
      expect(scope === "read", route).toBe(
        route.startsWith("GET ") && !route.includes("/v1/tenants") && !route.includes("/v1/keys") && route !== "GET /v1/audit",
      );
    }
  });

  it.each<[Scope[], Scope, boolean]>([
    [["admin"], "run", true],
    [["admin"], "read", true],
    [["run"], "read", true],
    [["run"], "admin", false],
    [["read"], "run", false],
    [["read", "run"], "run", true],
    [["read"], "read", true],
  ])("%j grants %s: %s", (granted, required, expected) => {
    expect(grantsScope(granted, required)).toBe(expected);
  });

  it.each([
    [["read"], true],
    [["admin", "run", "read"], true],
    [[], false],
    [["read", "read"], false],
    [["owner"], false],
    ["admin", false],
  ])("ScopesSchema %j → %s", (scopes, valid) => {
    expect(ScopesSchema.safeParse(scopes).success).toBe(valid);
  });
});
