// Test client: calls the orchestrator Worker's real entry (`exports.default.fetch`) as an HTTP client would.
import { exports } from "cloudflare:workers";
import { z } from "zod";

/** A token of the API_TOKENS secret: an admin key of the default tenant (the operator). */
export const TOKEN_A = "test-token-a";
export const ORIGIN = "https://orchestrator.test";

export interface CallOptions {
  method?: string;
  /** Sent as `Authorization: Bearer <token>`; null sends no Authorization header. */
  token?: string | null;
  /** Serialized as the JSON body with `Content-Type: application/json`. */
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
}

export function callApi(path: string, options: CallOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  const token = options.token === undefined ? TOKEN_A : options.token;
  if (token !== null) headers.set("authorization", `Bearer ${token}`);
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
  }
  const method = options.method ?? (body === undefined ? "GET" : "POST");
  return exports.default.fetch(new Request(`${ORIGIN}${path}`, { method, headers, body }));
}

/** A small valid swarm spec; `overrides` replace top-level fields. */
export function validSpec(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "review",
    model: "mock-1",
    tasks: [{ id: "auth.py", prompt: "Audit auth.py." }, { prompt: "Audit db.py." }, { prompt: "Audit api.py." }],
    ...overrides,
  };
}

export interface TenantKey {
  tenantId: string;
  keyId: string;
  key: string;
}

const TenantKeySchema = z.object({ id: z.string(), tenant_id: z.string(), key: z.string() });
const TenantSchema = z.object({ id: z.string() });

/** A new tenant (created with the operator token, as a user would) and one key of it. */
export async function createTenantKey(options: { name?: string; limits?: Record<string, unknown>; scopes?: string[]; rpm?: number } = {}): Promise<TenantKey> {
  const created = await callApi("/v1/tenants", { json: { name: options.name ?? "tenant", ...(options.limits ? { limits: options.limits } : {}) } });
  if (created.status !== 201) throw new Error(`POST /v1/tenants answered ${created.status}: ${await created.text()}`);
  const tenant = TenantSchema.parse(await created.json());
  return createKey(tenant.id, { scopes: options.scopes, rpm: options.rpm });
}

/** A new key of an existing tenant, created with `token` (the operator's by default). */
export async function createKey(tenantId: string, options: { scopes?: string[]; rpm?: number; token?: string; name?: string } = {}): Promise<TenantKey> {
  const json = { tenant_id: tenantId, name: options.name ?? "key", scopes: options.scopes ?? ["admin"], ...(options.rpm ? { rpm: options.rpm } : {}) };
  const response = await callApi("/v1/keys", { json, token: options.token ?? TOKEN_A });
  if (response.status !== 201) throw new Error(`POST /v1/keys answered ${response.status}: ${await response.text()}`);
  const key = TenantKeySchema.parse(await response.json());
  return { tenantId: key.tenant_id, keyId: key.id, key: key.key };
}

/** A multipart upload form as the SDKs send it: `purpose=batch` and the file, in either order. */
export function batchForm(filename: string, content: string | Blob, options: { purposeFirst?: boolean; purpose?: string } = {}): FormData {
  const form = new FormData();
  const purpose = options.purpose ?? "batch";
  if (options.purposeFirst === true) form.append("purpose", purpose);
  form.append("file", typeof content === "string" ? new Blob([content], { type: "application/jsonl" }) : content, filename);
  if (options.purposeFirst !== true) form.append("purpose", purpose);
  return form;
}
