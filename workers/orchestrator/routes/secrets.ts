// /v1/secrets: a tenant's secrets (an MCP server's `credential`). Write-only: PUT stores a value
// encrypted (src/secrets/secret-box.ts), GET lists names and dates, DELETE removes one. No answer,
// log or audit record ever holds a value.
import { Hono } from "hono";
import { ApiError } from "../../../src/core/errors.ts";
import { SecretNameSchema, SecretPutSchema, type SecretView } from "../../../src/core/tenant-secrets.ts";
import type { SecretRecord } from "../secret-store.ts";
import type { AppEnv } from "../app-env.ts";
import { readJsonBody } from "../json-body.ts";

function requireName(name: string): string {
  const parsed = SecretNameSchema.safeParse(name);
  if (!parsed.success)
    throw new ApiError("invalid_request", "the secret name is invalid", [{ path: "name", message: parsed.error.issues[0]?.message ?? "invalid" }]);
  return parsed.data;
}

function toSecretView(record: SecretRecord): SecretView {
  return { name: record.name, created_at: new Date(record.createdAt).toISOString(), updated_at: new Date(record.updatedAt).toISOString() };
}

export const secretRoutes = new Hono<AppEnv>()
  .put("/:name", async (c) => {
    const { deps, tenant } = c.var;
    const name = requireName(c.req.param("name"));
    const body = SecretPutSchema.safeParse(await readJsonBody(c));
    // The issue's message only: zod's input echo would carry the value.
    if (!body.success)
      throw new ApiError(
        "invalid_request",
        "the secret is invalid",
        body.error.issues.map((i) => ({ path: i.path.join(".") || "value", message: i.message })),
      );
    const box = deps.secretBox;
    if (box === null) throw new ApiError("not_found", "tenant secrets are not configured on this deployment (SECRETS_KEY is unset)");
    const record = await deps.secrets.put(tenant, name, await box.seal(tenant, name, body.data.value), deps.now());
    c.header("Cache-Control", "no-store");
    return c.json(toSecretView(record), record.createdAt === record.updatedAt ? 201 : 200);
  })
  .get("/", async (c) => {
    const { deps, tenant } = c.var;
    return c.json({ secrets: (await deps.secrets.list(tenant)).map(toSecretView) });
  })
  .delete("/:name", async (c) => {
    const { deps, tenant } = c.var;
    const name = requireName(c.req.param("name"));
    if (!(await deps.secrets.delete(tenant, name))) throw new ApiError("not_found", `this tenant has no secret "${name}"`);
    return c.body(null, 204);
  });
