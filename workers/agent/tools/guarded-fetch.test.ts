// The MCP client's fetch (src/mcp/guarded-fetch.ts): every hop passes the egress guard, only 307/308
// redirects are followed (each target checked), a credential never follows a redirect to another
// origin, and each hop (behind the slotted fetch, as mcp-tools.ts wires it) holds a connection slot
// until its headers arrive.
import { describe, expect, it } from "vitest";
import { createGuardedFetch, EgressRefused } from "../../../src/mcp/guarded-fetch.ts";
import { toSlottedFetch } from "./slotted-fetch.ts";

interface Seen {
  url: string;
  method: string;
  authorization: string | null;
  body: string;
}

/** A network of fixed answers by URL; any other URL is a lost connection. Records each request. */
function network(routes: Record<string, () => Response>) {
  const seen: Seen[] = [];
  const fetchFn = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    seen.push({ url: request.url, method: request.method, authorization: request.headers.get("authorization"), body: await request.text() });
    const route = routes[request.url];
    if (route === undefined) throw new TypeError(`Network connection lost (no route for ${request.url})`);
    return route();
  };
  return { fetch: fetchFn as typeof fetch, seen };
}

const redirect = (status: number, location: string) => () => new Response(null, { status, headers: { location } });
const ok = () => new Response('{"jsonrpc":"2.0","id":1,"result":{}}', { headers: { "content-type": "application/json" } });
const post = {
  method: "POST",
  headers: { authorization: "Bearer tok_secret", "content-type": "application/json" },
  body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
};

describe("createGuardedFetch", () => {
  it("follows a 307 and a 308 within the origin, keeping the method, body and credential", async () => {
    const net = network({
      "https://mcp.example.com/mcp": redirect(307, "/v2/mcp"),
      "https://mcp.example.com/v2/mcp": redirect(308, "https://mcp.example.com/v3/mcp"),
      "https://mcp.example.com/v3/mcp": ok,
    });
    const response = await createGuardedFetch({ fetch: net.fetch, allowPrivate: false, maxRedirects: 5 })("https://mcp.example.com/mcp", post);
    expect(response.status).toBe(200);
    expect(net.seen.map((s) => [s.url, s.method, s.authorization, s.body === post.body])).toEqual([
      ["https://mcp.example.com/mcp", "POST", "Bearer tok_secret", true],
      ["https://mcp.example.com/v2/mcp", "POST", "Bearer tok_secret", true],
      ["https://mcp.example.com/v3/mcp", "POST", "Bearer tok_secret", true],
    ]);
  });

  it("drops the credential on a redirect to another origin", async () => {
    const net = network({ "https://mcp.example.com/mcp": redirect(307, "https://other.example.net/mcp"), "https://other.example.net/mcp": ok });
    await createGuardedFetch({ fetch: net.fetch, allowPrivate: false, maxRedirects: 5 })("https://mcp.example.com/mcp", post);
    expect(net.seen.map((s) => s.authorization)).toEqual(["Bearer tok_secret", null]);
  });

  it.each([
    ["a redirect to the metadata address", { "https://mcp.example.com/mcp": redirect(307, "http://169.254.169.254/latest") }, /refused/],
    ["a redirect to loopback", { "https://mcp.example.com/mcp": redirect(308, "https://127.0.0.1/mcp") }, /refused/],
    ["a 302 (it would turn the POST into a GET)", { "https://mcp.example.com/mcp": redirect(302, "https://mcp.example.com/x") }, /only 307\/308/],
    ["a redirect loop", { "https://mcp.example.com/mcp": redirect(307, "https://mcp.example.com/mcp") }, /more than 5 times/],
  ])("refuses %s, reaching nothing unchecked", async (_label, routes, message) => {
    const net = network(routes);
    const guarded = createGuardedFetch({ fetch: net.fetch, allowPrivate: false, maxRedirects: 5 });
    await expect(guarded("https://mcp.example.com/mcp", post)).rejects.toThrow(message);
    await expect(guarded("https://mcp.example.com/mcp", post)).rejects.toBeInstanceOf(EgressRefused);
    expect(net.seen.every((s) => s.url.startsWith("https://mcp.example.com/"))).toBe(true);
  });

  it("refuses a private first hop unless private targets are allowed; link-local never", async () => {
    const net = network({ "http://127.0.0.1:8790/mcp": ok });
    await expect(createGuardedFetch({ fetch: net.fetch, allowPrivate: false, maxRedirects: 5 })("http://127.0.0.1:8790/mcp", post)).rejects.toThrow(/refused/);
    expect((await createGuardedFetch({ fetch: net.fetch, allowPrivate: true, maxRedirects: 5 })("http://127.0.0.1:8790/mcp", post)).status).toBe(200);
    await expect(createGuardedFetch({ fetch: net.fetch, allowPrivate: true, maxRedirects: 5 })("http://169.254.169.254/mcp", post)).rejects.toThrow(/refused/);
    expect(net.seen).toHaveLength(1);
  });

  it("takes a slot per hop until its headers arrive, and gives it back when the request fails", async () => {
    let held = 0;
    let most = 0;
    let taken = 0;
    const takeSlot = async () => {
      taken += 1;
      held += 1;
      most = Math.max(most, held);
      return () => {
        held -= 1;
      };
    };
    const net = network({ "https://mcp.example.com/mcp": redirect(307, "/v2/mcp"), "https://mcp.example.com/v2/mcp": ok });
    const guarded = createGuardedFetch({ fetch: toSlottedFetch(net.fetch, takeSlot), allowPrivate: false, maxRedirects: 5 });
    await guarded("https://mcp.example.com/mcp", post);
    expect([taken, held, most]).toEqual([2, 0, 1]);
    await expect(guarded("https://mcp.example.com/gone", post)).rejects.toThrow(/Network connection lost/);
    expect(held).toBe(0);
  });
});
