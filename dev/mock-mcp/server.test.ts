// Tests the mock MCP server's lean path for `search_code` calls (2026-07-28 and session-based) against its SDK path:
// each request goes to a mock with the lean path and to one without, over real loopback HTTP, and
// the two answers must be the same (status, content type, JSON-RPC body); then the official SDK
// client calls the tool through the lean path.
import { afterAll, describe, expect, it } from "vitest";
import { openMcpSession } from "../../src/mcp/mcp-session.ts";
import { startMockMcp } from "./server.ts";

const lean = await startMockMcp({ latencyMs: 0 });
const sdkOnly = await startMockMcp({ latencyMs: 0, lean: false });
afterAll(async () => {
  await lean.close();
  await sdkOnly.close();
});

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "edgeswarm", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {},
};
const HEADERS = {
  accept: "application/json, text/event-stream",
  "content-type": "application/json",
  "mcp-method": "tools/call",
  "mcp-name": "search_code",
  "mcp-protocol-version": "2026-07-28",
};
/** A tools/call as the SDK client of 2026-07-28 sends it (headers and body). */
const call = (args: unknown, overrides: { headers?: Record<string, string>; name?: string; meta?: Record<string, unknown>; id?: unknown } = {}) => ({
  headers: { ...HEADERS, ...overrides.headers },
  body: {
    method: "tools/call",
    params: { name: overrides.name ?? "search_code", arguments: args, _meta: overrides.meta ?? META },
    jsonrpc: "2.0",
    id: overrides.id ?? 7,
  },
});

async function answerOf(baseUrl: string, path: string, request: ReturnType<typeof call>) {
  const response = await fetch(`${baseUrl}${path}`, { method: "POST", headers: request.headers, body: JSON.stringify(request.body) });
  const text = await response.text();
  return { status: response.status, type: response.headers.get("content-type"), body: text.startsWith("{") ? (JSON.parse(text) as unknown) : text };
}

describe("the lean search_code answer", () => {
  const cases: Array<{ name: string; request: ReturnType<typeof call>; path?: string }> = [
    { name: "a match", request: call({ query: "token" }) },
    { name: "no match", request: call({ query: "nothing-here" }) },
    { name: "a string id", request: call({ query: "db" }, { id: "req-1" }) },
    { name: "arguments of the wrong type (SDK: invalid params)", request: call({ query: 5 }) },
    { name: "missing arguments (SDK: invalid params)", request: call({}) },
    { name: "an mcp-name header that differs from the body (SDK: refused)", request: call({ query: "token" }, { headers: { "mcp-name": "read_file" } }) },
    { name: "another tool (SDK)", request: call({ path: "src/db.ts" }, { name: "read_file", headers: { "mcp-name": "read_file" } }) },
    { name: "a server whose catalog changes (SDK)", request: call({ query: "token" }), path: "/mcp?catalog_change_after=100" },
  ];
  for (const { name, request, path } of cases) {
    it(`answers as the SDK's server does: ${name}`, async () => {
      const fromLean = await answerOf(lean.url, path ?? "/mcp", request);
      const fromSdk = await answerOf(sdkOnly.url, path ?? "/mcp", request);
      expect(fromLean).toEqual(fromSdk);
    });
  }

  it("serves the official client's call and counts it as the SDK path does (2026-07-28)", async () => {
    lean.reset();
    const session = await openMcpSession({ url: `${lean.url}/mcp?swarm=lean`, fetch, bearer: null, timeoutMs: 5_000 });
    try {
      const [tool] = (await session.listTools(5_000)).filter((t) => t.name === "search_code");
      expect(tool).toBeDefined();
      if (tool === undefined) return;
      const answer = await session.callTool(tool, { query: "checkToken" }, 5_000, new AbortController().signal);
      expect(answer).toEqual({ isError: false, content: [{ type: "text", text: "src/auth.ts:1: export function checkToken(token: string): boolean {" }] });
    } finally {
      await session.close();
    }
    const stats = lean.stats();
    expect(stats.calls["/mcp?swarm=lean"]).toBe(1);
    expect(stats.requests["/mcp?swarm=lean"]).toEqual({ "server/discover": 1, "tools/list": 1, "tools/call": 1 });
    expect(stats.eras.modern).toBe(3);
    expect(stats.maxConcurrentCalls).toBe(1);
  });
});

const SESSION_HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" };

/** A session opened the way the SDK client opens one: `initialize`, then `notifications/initialized`. */
async function openRawSession(baseUrl: string): Promise<string> {
  const init = await fetch(`${baseUrl}/session/mcp`, {
    method: "POST",
    headers: SESSION_HEADERS,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "edgeswarm", version: "1.0.0" } },
    }),
  });
  await init.text();
  const id = init.headers.get("mcp-session-id");
  if (id === null) throw new Error(`no session: HTTP ${init.status}`);
  const notified = await fetch(`${baseUrl}/session/mcp`, {
    method: "POST",
    headers: { ...SESSION_HEADERS, "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  await notified.text();
  return id;
}

/** A session's answer: what a client reads (the session id, the date and Node's connection headers left out). */
async function sessionAnswerOf(baseUrl: string, session: string, body: unknown, headers: Record<string, string>) {
  const response = await fetch(`${baseUrl}/session/mcp`, {
    method: "POST",
    headers: { ...SESSION_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25", ...headers },
    body: JSON.stringify(body),
  });
  const kept: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!["date", "connection", "keep-alive", "transfer-encoding", "mcp-session-id"].includes(name)) kept[name] = value;
  });
  return {
    status: response.status,
    headers: kept,
    echoedSession: response.headers.get("mcp-session-id") === session,
    body: await response.text(),
  };
}

describe("the lean search_code answer in a session", () => {
  const call = (args: unknown, more: Record<string, unknown> = {}) => ({
    jsonrpc: "2.0",
    id: 3,
    method: "tools/call",
    params: { name: "search_code", arguments: args, ...more },
  });
  const cases: Array<{ name: string; body: unknown; headers?: Record<string, string> }> = [
    { name: "a match", body: call({ query: "token" }) },
    { name: "no match", body: call({ query: "nothing-here" }) },
    { name: "arguments of the wrong type (SDK: invalid params)", body: call({ query: 5 }) },
    { name: "another protocol revision's header (SDK)", body: call({ query: "token" }), headers: { "mcp-protocol-version": "2025-06-18" } },
    {
      name: "a 2026-07-28 envelope in a session (SDK)",
      body: call({ query: "token" }, { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }),
    },
  ];
  for (const { name, body, headers } of cases) {
    it(`answers as the SDK's session transport does: ${name}`, async () => {
      const fromLean = await sessionAnswerOf(lean.url, await openRawSession(lean.url), body, headers ?? {});
      const fromSdk = await sessionAnswerOf(sdkOnly.url, await openRawSession(sdkOnly.url), body, headers ?? {});
      expect(fromLean).toEqual(fromSdk);
    });
  }

  it("serves the official client's call in a session", async () => {
    lean.reset();
    const session = await openMcpSession({ url: `${lean.url}/session/mcp?swarm=lean`, fetch, bearer: null, timeoutMs: 5_000 });
    try {
      const [tool] = (await session.listTools(5_000)).filter((t) => t.name === "search_code");
      if (tool === undefined) throw new Error("no search_code");
      const answer = await session.callTool(tool, { query: "checkToken" }, 5_000, new AbortController().signal);
      expect(answer).toEqual({ isError: false, content: [{ type: "text", text: "src/auth.ts:1: export function checkToken(token: string): boolean {" }] });
    } finally {
      await session.close();
    }
    expect(lean.stats().calls["/session/mcp?swarm=lean"]).toBe(1);
  });
});
