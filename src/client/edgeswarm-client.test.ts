// The typed client against a local fake API: errors as typed values with the API's code, results
// followed across pages, watch resumed after a dropped connection.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeApi, startFakeApi } from "../../cli/test/fake-api.ts";
import { createClient, EdgeswarmError } from "./index.ts";

let api: FakeApi;
beforeAll(async () => {
  api = await startFakeApi();
});
afterAll(async () => api.close());

describe("EdgeswarmClient", () => {
  it("throws the API's error as an EdgeswarmError with its code, details and request id", async () => {
    const client = createClient({ baseUrl: api.url, token: "t0k" });
    const error = await client.createSwarm({ name: "refuse" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EdgeswarmError);
    expect(error).toMatchObject({ code: "invalid_spec", status: 400, details: [{ path: "tasks", message: "Required" }], requestId: "req-fake" });
  });

  it("reads Retry-After of a 429", async () => {
    const client = createClient({ baseUrl: api.url, token: "t0k" });
    // biome-ignore lint/suspicious/noExplicitAny: reaching a route the client has no method for
    const error = await (client as any).request("GET", "/v1/busy").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "rate_limited", status: 429, retryAfterS: 7 });
  });

  it("sends an Idempotency-Key with every create, and retries a 5xx or a lost connection under the same key", async () => {
    const keys: (string | null)[] = [];
    let calls = 0;
    const flaky: typeof fetch = async (_input, init) => {
      calls += 1;
      keys.push(new Headers(init?.headers).get("idempotency-key"));
      if (calls === 1) throw new TypeError("fetch failed: socket hang up");
      if (calls === 2) return new Response(JSON.stringify({ error: { code: "internal", message: "x", details: [] } }), { status: 503 });
      return new Response(JSON.stringify({ id: "sw_aaaaaaaaaaaaaaaaaaaa", state: "running", urls: {} }), { status: 202 });
    };
    const client = createClient({ baseUrl: "http://api.test", token: "t0k", fetch: flaky });
    const created = await client.createSwarm({ name: "s", model: "mock-1", tasks: [{ prompt: "p" }] });
    expect(created.id).toBe("sw_aaaaaaaaaaaaaaaaaaaa");
    expect(calls).toBe(3);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
  });

  it("does not retry a create the API refused (4xx), and never sends a key on a GET", async () => {
    const seen: { method: string; key: string | null }[] = [];
    const refusing: typeof fetch = async (_input, init) => {
      seen.push({ method: init?.method ?? "GET", key: new Headers(init?.headers).get("idempotency-key") });
      return new Response(JSON.stringify({ error: { code: "invalid_spec", message: "x", details: [] } }), { status: 400 });
    };
    const client = createClient({ baseUrl: "http://api.test", token: "t0k", fetch: refusing });
    await expect(client.createSwarm({ name: "s" }, { idempotencyKey: "mine" })).rejects.toMatchObject({ code: "invalid_spec" });
    await expect(client.getSwarm("sw_x")).rejects.toMatchObject({ status: 400 });
    expect(seen).toEqual([
      { method: "POST", key: "mine" },
      { method: "GET", key: null },
    ]);
  });

  it("reports an unreachable API as code network", async () => {
    const client = createClient({ baseUrl: "http://127.0.0.1:1", token: "t0k" });
    await expect(client.getSwarm("sw_ok")).rejects.toMatchObject({ code: "network", status: 0 });
  });

  it("iterates results across pages", async () => {
    const client = createClient({ baseUrl: `${api.url}/`, token: "t0k" });
    const ids: string[] = [];
    for await (const result of client.results("sw_ok")) ids.push(result.task_id);
    expect(ids).toEqual(["a", "b"]);
    expect(api.requests.filter((r) => r.path.startsWith("/v1/swarms/sw_ok/results")).map((r) => r.path)).toEqual([
      "/v1/swarms/sw_ok/results?limit=1000",
      "/v1/swarms/sw_ok/results?limit=1000&cursor=1",
    ]);
  });

  it("watch resumes a dropped stream with Last-Event-ID and yields each event once, ending after done", async () => {
    const client = createClient({ baseUrl: api.url, token: "t0k" });
    const seen: [number, string][] = [];
    for await (const event of client.watch("sw_ok", { reconnectDelayMs: 1 })) seen.push([event.id, event.type]);
    expect(seen).toEqual([
      [1, "snapshot"],
      [2, "progress"],
      [3, "tasks"],
      [4, "done"],
    ]);
  });
});
