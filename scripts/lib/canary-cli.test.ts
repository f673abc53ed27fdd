import { describe, expect, it } from "vitest";
import { runCanaryCli } from "./canary-cli.ts";

/** A stack that answers every request with `answer(method, path)`, and the requests it saw. */
function fakeStack(answer: (method: string, path: string) => Response | Error) {
  const seen: string[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const method = init?.method ?? "GET";
    const path = new URL(String(input)).pathname;
    seen.push(`${method} ${path}`);
    const response = answer(method, path);
    if (response instanceof Error) throw response;
    return response;
  };
  return { fetch: fetchImpl, seen };
}

const json = (status: number, body: unknown): Response => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

async function run(argv: string[], options: { env?: Record<string, string>; fetch?: typeof fetch } = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCanaryCli(argv, {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    env: options.env ?? {},
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  return { code, out, err };
}

describe("npm run canary: bad input is one line and exit 2", () => {
  it.each([
    ["no --url", [], /--url is required/],
    ["a bad URL", ["--url", "not a url", "--token", "k"], /"not a url" is not a URL/],
    ["a URL that is not http", ["--url", "ftp://example.com", "--token", "k"], /is not http\(s\)/],
    ["no token", ["--url", "https://edgeswarm.example.workers.dev"], /--token is required/],
    ["no model for a deployed stack", ["--url", "https://edgeswarm.example.workers.dev", "--token", "k"], /--model is required/],
    ["a non-integer --tasks", ["--url", "http://127.0.0.1:8787", "--token", "k", "--tasks", "lots"], /--tasks <n>.*want an integer 1-10,000/],
    ["a window above 1,500", ["--url", "http://127.0.0.1:8787", "--token", "k", "--concurrency", "2000"], /want an integer 1-1,500/],
    ["an unknown option", ["--url", "http://127.0.0.1:8787", "--tokn", "k"], /unknown option '--tokn'/],
  ])("%s", async (_label, argv, message) => {
    const { code, out, err } = await run(argv);
    expect(code).toBe(2);
    expect(out).toEqual([]);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(message);
  });

  it("takes the URL and token from EDGESWARM_URL and EDGESWARM_API_TOKEN", async () => {
    const stack = fakeStack(() => json(401, { error: { code: "unauthorized", message: "missing or invalid token" } }));
    const { code } = await run([], { env: { EDGESWARM_URL: "http://127.0.0.1:8787", EDGESWARM_API_TOKEN: "k" }, fetch: stack.fetch });
    expect(code).toBe(1);
    expect(stack.seen).toEqual(["POST /v1/swarms/estimate"]);
  });
});

describe("npm run canary: what the stack refuses is one line and exit 1", () => {
  const local = ["--url", "http://127.0.0.1:8787", "--token", "k"];

  it.each([
    ["a 401", () => json(401, { error: { code: "unauthorized", message: "missing or invalid token" } }), /refused the token \(401 unauthorized\)/],
    ["a 403", () => json(403, { error: { code: "forbidden", message: "needs run" } }), /needs a key with the run scope/],
    ["no API at that URL", () => new Response("<h1>Not found</h1>", { status: 404 }), /no edgeswarm API there \(404\)/],
    ["nobody listening", () => new TypeError("fetch failed"), /cannot reach http:\/\/127\.0\.0\.1:8787.*is the stack running/],
  ])("%s", async (_label, answer, message) => {
    const stack = fakeStack(answer);
    const { code, err } = await run(local, { fetch: stack.fetch });
    expect(code).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(message);
  });
});

describe("npm run canary: no spending by accident", () => {
  const local = ["--url", "http://127.0.0.1:8787", "--token", "k"];

  it.each([
    ["an estimate above --max-usd", { min: 0.01, max: 0.2 }, [], /could reach \$0\.200, above --max-usd 0\.05: pass --yes/],
    ["an estimate above a lower --max-usd", { min: 0.0001, max: 0.002 }, ["--max-usd", "0.001"], /above --max-usd 0\.001/],
    ["a model without a price", null, [], /has no price on this stack.*pass --yes/],
  ])("refuses %s without --yes, and starts nothing", async (_label, cost, extra, message) => {
    const stack = fakeStack((method, path) => (method === "POST" && path === "/v1/swarms/estimate" ? json(200, { cost_usd: cost }) : json(500, {})));
    const { code, err } = await run([...local, ...extra], { fetch: stack.fetch });
    expect(code).toBe(2);
    expect(err.at(-1)).toMatch(message);
    expect(stack.seen).toEqual(["POST /v1/swarms/estimate"]);
  });

  it("starts the swarm above --max-usd with --yes", async () => {
    const stack = fakeStack((_method, path) =>
      path === "/v1/swarms/estimate" ? json(200, { cost_usd: { min: 0.01, max: 0.2 } }) : json(401, { error: { code: "unauthorized", message: "revoked" } }),
    );
    await run([...local, "--yes"], { fetch: stack.fetch });
    expect(stack.seen).toEqual(["POST /v1/swarms/estimate", "POST /v1/swarms"]);
  });
});
