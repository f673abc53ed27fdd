// Test client: calls the orchestrator Worker's real entry (`exports.default.fetch`) as an HTTP client would.
import { exports } from "cloudflare:workers";

export const TOKEN_A = "test-token-a";
export const TOKEN_B = "test-token-b";
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
