import { describe, expect, it } from "vitest";
import { parseKeyCreate, parseTenantCreate, parseTenantPatch } from "./tenant-requests.ts";

const NOW = Date.UTC(2026, 11, 1);
const paths = (result: { ok: boolean; error?: { path: string }[] }): string[] => (result.ok ? [] : (result.error ?? []).map((d) => d.path));

describe("tenant and key request bodies", () => {
  it.each([
    [{ name: "team" }, []],
    [{ name: "  team  ", limits: { rpm: 10 } }, []],
    [{ name: "" }, ["name"]],
    [{ name: "a\u0000b" }, ["name"]],
    [{ name: "t", limits: { rpm: "10" } }, ["limits.rpm"]],
    [{ name: "t", id: "tn_mine" }, ["(root)"]],
    [[], ["(root)"]],
  ])("POST /v1/tenants %j → %j", (body, expected) => {
    expect(paths(parseTenantCreate(body))).toEqual(expected);
  });

  it("trims a tenant's name and defaults its limits", () => {
    expect(parseTenantCreate({ name: "  team  " })).toEqual({ ok: true, value: { name: "team", limits: {} } });
  });

  it.each([
    [{ name: "renamed" }, []],
    [{ limits: { rpm: null } }, []],
    [{}, ["(root)"]],
    [{ limits: { rpm: 0 } }, ["limits.rpm"]],
  ])("PATCH /v1/tenants/:id %j → %j", (body, expected) => {
    expect(paths(parseTenantPatch(body))).toEqual(expected);
  });

  it.each([
    [{ tenant_id: "tn_default", name: "k", scopes: ["read"] }, []],
    [{ tenant_id: "tn_default", name: "k", scopes: ["run"], rpm: 10, expires_at: "2027-01-01T00:00:00Z" }, []],
    [{ tenant_id: "default", name: "k", scopes: ["read"] }, ["tenant_id"]],
    [{ tenant_id: "tn_default", name: "k", scopes: [] }, ["scopes"]],
    [{ tenant_id: "tn_default", name: "k", scopes: ["read"], expires_at: "2026-01-01T00:00:00Z" }, ["expires_at"]],
    [{ tenant_id: "tn_default", name: "k", scopes: ["read"], expires_at: "next week" }, ["expires_at"]],
    [{ tenant_id: "tn_default", name: "k", scopes: ["read"], rpm: 0 }, ["rpm"]],
    [{ tenant_id: "tn_default", name: "k", scopes: ["read"], key: "es_local_mine" }, ["(root)"]],
  ])("POST /v1/keys %j → %j", (body, expected) => {
    expect(paths(parseKeyCreate(body, NOW))).toEqual(expected);
  });

  it("turns expires_at into epoch ms, and absent values into null", () => {
    expect(parseKeyCreate({ tenant_id: "tn_a1", name: "k", scopes: ["read"], expires_at: "2027-01-01T00:00:00+01:00" }, NOW)).toEqual({
      ok: true,
      value: { tenantId: "tn_a1", name: "k", scopes: ["read"], expiresAt: Date.UTC(2026, 11, 31, 23), rpm: null },
    });
  });
});
