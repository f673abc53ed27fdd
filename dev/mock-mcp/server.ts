// A MOCK MCP server for local runs, tests and benchmarks: a code-search server's tools over
// Streamable HTTP in both protocol eras, with latency and fault injection. Its answers are fake.
// Built on the official server SDK (@modelcontextprotocol/server), so the wire is the SDK's (a plain
// search_code call is answered by a lean handler with the SDK's bytes: toLeanSearchCall below):
//   /mcp          both eras: 2026-07-28 (sessionless, `server/discover` + per-request `_meta`) and
//                 2025-era requests served statelessly (createMcpHandler's `legacy: "stateless"`)
//   /session/mcp  the session-based 2025 era only (`initialize`, then `Mcp-Session-Id` on every request)
// Query parameters of the server URL set its behaviour (the URL is what a swarm spec names):
//   latency_ms=N         each tool call takes N ms (default: the server's --latency)
//   fail=401|429|dead    tool calls answer HTTP 401 / 429, or the connection is dropped (listing still works)
//   catalog_change_after=N  after N tool calls the catalog changes (search_code gains a required
//                        `limit`) and later calls' answers carry notifications/tools/list_changed
// A server with `dead` in its path (e.g. /dead/mcp) drops every connection: an unreachable server.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { createMcpHandler, inputRequired, McpServer, ProtocolError, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { z } from "zod";

export interface MockMcpOptions {
  port?: number;
  /** Default latency of a tool call, ms. */
  latencyMs?: number;
  /**
   * Answer a plain 2026-07-28 `search_code` call without the SDK (toLeanSearchCall); default true.
   * false: every request goes through the SDK's server (the tests compare the two answers).
   */
  lean?: boolean;
}

export interface MockMcpStats {
  /** `tools/list` requests answered, per URL (path and query). `GET /_stats` answers these stats. */
  listReads: Record<string, number>;
  /** `tools/call` requests received, per URL. */
  calls: Record<string, number>;
  /** Most tool calls running at once, over the whole server. */
  maxConcurrentCalls: number;
  /** Requests per protocol era: "modern" carries the 2026-07-28 `_meta` envelope. */
  eras: { modern: number; legacy: number };
  /** Authorization header values seen (so tests can check a credential arrived, and only where it should). */
  authorizations: string[];
  /**
   * HTTP requests to the MCP endpoints, per URL, by what they carried: the JSON-RPC method of a POST
   * (`tools/call`, `initialize`, …), else the HTTP method (`GET` for a session's SSE stream, `DELETE`).
   */
  requests: Record<string, Record<string, number>>;
}

export interface MockMcpHandle {
  url: string;
  stats(): MockMcpStats;
  reset(): void;
  close(): Promise<void>;
}

/** Bytes of huge_result's answer. */
export const HUGE_RESULT_BYTES = 1_048_576;

const FILES: Record<string, string> = {
  "src/auth.ts": "export function checkToken(token: string): boolean {\n  return token.length > 0; // TODO: constant-time compare\n}\n",
  "src/db.ts": 'export async function findUser(db: Db, id: string) {\n  return db.query("SELECT * FROM users WHERE id = \'" + id + "\'");\n}\n',
  "src/handler.ts": "export async function handle(req: Request) {\n  const body = await req.json();\n  return new Response(JSON.stringify(body));\n}\n",
};

interface Scope {
  key: string;
  latencyMs: number;
  changeAfter: number | null;
}

export async function startMockMcp(options: MockMcpOptions = {}): Promise<MockMcpHandle> {
  const defaultLatency = options.latencyMs ?? 0;
  const lean = options.lean ?? true;
  let stats = emptyStats();
  let running = 0;
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const catalogChanged = (scope: Scope): boolean => scope.changeAfter !== null && (stats.calls[scope.key] ?? 0) > scope.changeAfter;

  // The tools' schemas and configs are built once: the 2026-07-28 handler needs a fresh McpServer per
  // request (it refuses one already serving), and building 8 zod schemas and tool configs each time
  // was about half of the mock's ~2.5 ms of CPU a call (npm run bench:mcp -- --cpu, docs/benchmarks.md).
  /** A tool call's work after the scope's latency, counted in the calls running at once. */
  const timedIn = async <T>(scope: Scope, work: () => Promise<T> | T, notify?: () => Promise<void>): Promise<T> => {
    running += 1;
    stats.maxConcurrentCalls = Math.max(stats.maxConcurrentCalls, running);
    try {
      if (notify !== undefined && catalogChanged(scope)) await notify();
      if (scope.latencyMs > 0) await sleep(scope.latencyMs);
      return await work();
    } finally {
      running -= 1;
    }
  };

  const buildServer = (scope: Scope): McpServer => {
    const server = new McpServer(SERVER_INFO, SERVER_OPTIONS);
    const timed = <T>(work: () => Promise<T> | T, notify?: () => Promise<void>): Promise<T> => timedIn(scope, work, notify);
    server.registerTool("search_code", catalogChanged(scope) ? TOOLS.searchCodeChanged : TOOLS.searchCode, async (args, ctx) =>
      timed(
        () => searchCode(String((args as { query: string }).query)),
        () => ctx.mcpReq.notify({ method: "notifications/tools/list_changed" }),
      ),
    );
    server.registerTool("read_file", TOOLS.readFile, async ({ path }) =>
      timed(() => (FILES[path] === undefined ? { isError: true, ...toText(`[mock] no file ${path}`) } : toText(FILES[path]))),
    );
    server.registerTool("slow_search", TOOLS.slowSearch, async () => {
      await sleep(5_000);
      return toText("[mock] slow result");
    });
    server.registerTool("huge_result", TOOLS.hugeResult, async () => timed(() => toText("x".repeat(HUGE_RESULT_BYTES))));
    server.registerTool("failing_tool", TOOLS.failingTool, async () => timed(() => ({ isError: true, ...toText("[mock] the index is rebuilding") })));
    server.registerTool("rpc_error_tool", TOOLS.rpcErrorTool, async () =>
      timed(() => {
        throw new ProtocolError(-32603, "[mock] internal failure of the search backend");
      }),
    );
    server.registerTool("image_tool", TOOLS.imageTool, async () =>
      timed(() => ({
        content: [
          { type: "text" as const, text: "[mock] a chart:" },
          { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" },
        ],
      })),
    );
    server.registerTool("ask_user", TOOLS.askUser, async (_args, ctx) => {
      if (ctx.mcpReq.inputResponses === undefined && isModern(ctx.http?.req)) {
        return inputRequired({ inputRequests: { confirm: inputRequired.elicit({ message: "Go on?", requestedSchema: CONFIRM_SCHEMA }) } });
      }
      const answer = await ctx.mcpReq.elicitInput({
        mode: "form",
        message: "Go on?",
        requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } },
      });
      return toText(`[mock] the user said ${answer.action}`);
    });
    return server;
  };

  // One handler for every scope (its factory reads the scope from the request's URL), not one per
  // request: createMcpHandler sets up an event bus, a listen router and the 2025-era fallback.
  const dual = createMcpHandler(({ requestInfo }) => buildServer(toScope(new URL(requestInfo?.url ?? "http://127.0.0.1/"), defaultLatency)), {
    legacy: "stateless",
  });
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

  const handle = async (request: Request, scope: Scope, sessionEra: boolean): Promise<Response> => {
    if (!sessionEra) return dual.fetch(request);
    const id = request.headers.get("mcp-session-id");
    const existing = id === null ? undefined : sessions.get(id);
    if (existing !== undefined) return existing.handleRequest(request);
    if (id !== null) return Response.json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }, { status: 404 });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => {
        sessions.set(sid, transport);
      },
    });
    await buildServer(scope).connect(transport);
    return transport.handleRequest(request);
  };

  const server = createServer((req, res) => {
    void serve(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(`[mock] ${error instanceof Error ? error.message : String(error)}`);
    });
  });

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname.includes("/dead")) {
      req.socket.destroy();
      return;
    }
    if (url.pathname === "/_reset" && req.method === "POST") {
      stats = emptyStats();
      res.writeHead(204).end();
      return;
    }
    if (url.pathname === "/slow") {
      // Not MCP: a plain page answered after ?ms= (default: the server's latency), for comparing an
      // MCP tool with http_fetch at the same latency (npm run bench:mcp).
      await sleep(Number(url.searchParams.get("ms") ?? defaultLatency));
      res.writeHead(200, { "content-type": "text/plain" }).end("[mock] src/auth.ts:1: export function checkToken(token: string): boolean {");
      return;
    }
    if (url.pathname === "/_stats") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(stats));
      return;
    }
    if (url.pathname !== "/mcp" && url.pathname !== "/session/mcp") {
      res.writeHead(404, { "content-type": "text/plain" }).end("[mock] not an MCP endpoint");
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const message = parseMessage(body);
    const key = `${url.pathname}${url.search}`;
    const auth = req.headers.authorization;
    if (auth !== undefined) stats.authorizations.push(auth);
    const kind = message?.method ?? (req.method === "POST" ? "POST" : (req.method ?? "?"));
    const byKind = stats.requests[key] ?? {};
    byKind[kind] = (byKind[kind] ?? 0) + 1;
    stats.requests[key] = byKind;
    if (message !== null) {
      if (message.method === "tools/list") stats.listReads[key] = (stats.listReads[key] ?? 0) + 1;
      if (message.method !== undefined && message.method !== "notifications/initialized") {
        if (message.modern) stats.eras.modern += 1;
        else stats.eras.legacy += 1;
      }
      if (message.method === "tools/call") {
        stats.calls[key] = (stats.calls[key] ?? 0) + 1;
        const fail = url.searchParams.get("fail");
        if (fail === "dead") {
          req.socket.destroy();
          return;
        }
        if (fail === "401" || fail === "429") {
          res.writeHead(Number(fail), { "content-type": "application/json", ...(fail === "429" ? { "retry-after": "1" } : {}) });
          res.end(JSON.stringify({ error: fail === "401" ? "[mock] unauthorized" : "[mock] too many requests" }));
          return;
        }
      }
    }
    const scope = toScope(url, defaultLatency);
    if (lean && url.pathname === "/mcp" && message?.method === "tools/call") {
      const call = toLeanSearchCall(message.body, req.headers, scope);
      if (call !== null) {
        const answer = await timedIn(scope, () => toLeanAnswer(call.id, searchCode(call.query)));
        res.writeHead(200, { "content-type": "application/json" }).end(answer);
        return;
      }
    }
    const sessionId = req.headers["mcp-session-id"];
    if (lean && url.pathname === "/session/mcp" && message?.method === "tools/call" && typeof sessionId === "string" && sessions.has(sessionId)) {
      const call = toLeanSessionSearchCall(message.body, req.headers, scope);
      if (call !== null) {
        const answer = await timedIn(scope, () => toLeanSessionAnswer(call.id, searchCode(call.query)));
        res
          .writeHead(200, {
            "content-type": "text/event-stream",
            "cache-control": "no-cache, no-transform",
            "mcp-session-id": sessionId,
            "x-accel-buffering": "no",
          })
          .end(answer);
        return;
      }
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
    const request = new Request(url.href, { method: req.method ?? "GET", headers, ...(req.method === "POST" ? { body } : {}) });
    const response = await handle(request, scope, url.pathname === "/session/mcp");
    const outHeaders: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      outHeaders[name] = value;
    });
    res.writeHead(response.status, outHeaders);
    if (response.body === null) {
      res.end();
      return;
    }
    const reader = response.body.getReader();
    res.on("close", () => void reader.cancel().catch(() => {}));
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
    res.end();
  };

  await new Promise<void>((resolve) => server.listen({ port: options.port ?? 0, host: "127.0.0.1" }, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats: () => structuredClone(stats),
    reset: () => {
      stats = emptyStats();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const transport of sessions.values()) void transport.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What a server URL's path and query ask of the mock (see the top of this file). */
function toScope(url: URL, defaultLatency: number): Scope {
  return {
    key: `${url.pathname}${url.search}`,
    latencyMs: Number(url.searchParams.get("latency_ms") ?? defaultLatency),
    changeAfter: url.searchParams.has("catalog_change_after") ? Number(url.searchParams.get("catalog_change_after")) : null,
  };
}

const toText = (t: string) => ({ content: [{ type: "text" as const, text: t }] });

/** search_code's answer: the lines of FILES holding any word of the query, as path:line: text. */
function searchCode(rawQuery: string) {
  const query = rawQuery.toLowerCase();
  const hits = Object.entries(FILES).flatMap(([path, body]) =>
    body
      .split("\n")
      .map((line, i) => ({ path, line: i + 1, text: line }))
      .filter((l) => query.split(/\s+/).some((w) => w !== "" && l.text.toLowerCase().includes(w))),
  );
  return toText(hits.length === 0 ? `[mock] no match for "${query}"` : hits.map((h) => `${h.path}:${h.line}: ${h.text}`).join("\n"));
}

const SERVER_INFO = { name: "mock-mcp (MOCK code search)", version: "1.0.0" };
const SERVER_OPTIONS = { capabilities: { tools: { listChanged: true } } };
const CONFIRM_SCHEMA = z.object({ ok: z.boolean() });
const EMPTY_INPUT = z.object({});
const SEARCH_DESCRIPTION = "[mock] Search the repository's code for a string; answers matching lines as path:line: text.";
/** Each tool's registration config; search_code's second form is the changed catalog's (a required `limit`). */
const TOOLS = {
  searchCode: { description: SEARCH_DESCRIPTION, inputSchema: z.object({ query: z.string() }) },
  searchCodeChanged: { description: SEARCH_DESCRIPTION, inputSchema: z.object({ query: z.string(), limit: z.number().int() }) },
  readFile: { description: "[mock] Read a file of the repository by its path.", inputSchema: z.object({ path: z.string() }) },
  slowSearch: { description: "[mock] A search that takes 5 seconds.", inputSchema: z.object({ query: z.string() }) },
  hugeResult: { description: "[mock] Answers 1 MiB of text.", inputSchema: EMPTY_INPUT },
  failingTool: { description: "[mock] Always fails (isError).", inputSchema: EMPTY_INPUT },
  rpcErrorTool: { description: "[mock] Always answers a JSON-RPC error.", inputSchema: EMPTY_INPUT },
  imageTool: { description: "[mock] Answers text and an image.", inputSchema: EMPTY_INPUT },
  askUser: { description: "[mock] Asks the user to confirm (elicitation).", inputSchema: EMPTY_INPUT },
};

function emptyStats(): MockMcpStats {
  return { listReads: {}, calls: {}, maxConcurrentCalls: 0, eras: { modern: 0, legacy: 0 }, authorizations: [], requests: {} };
}

/** A 2026-07-28 request carries the protocol version in its `_meta` envelope. */
function isModern(request: Request | undefined): boolean {
  return request?.headers.get("mcp-protocol-version") === "2026-07-28";
}

function parseMessage(body: Buffer): { method?: string; modern: boolean; body: unknown } | null {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { method?: unknown; params?: { _meta?: Record<string, unknown> } };
    const meta = parsed?.params?._meta ?? {};
    const modern = Object.keys(meta).some((k) => k.startsWith("io.modelcontextprotocol/"));
    return { ...(typeof parsed?.method === "string" ? { method: parsed.method } : {}), modern, body: parsed };
  } catch {
    return null;
  }
}

const MODERN_REVISION = "2026-07-28";

/**
 * The lean path's request: a well-formed 2026-07-28 `tools/call` of `search_code` whose arguments
 * pass the tool's own schema, on a server whose catalog does not change, with the standard headers
 * matching its body. Anything else (null) goes to the SDK's server, which answers it or refuses it.
 * Why: the SDK's 2026-07-28 handler builds, serves and tears down a whole McpServer per request
 * (about 2 ms of CPU in Node, on the same two cores as the stack under test locally), where a
 * real server would run elsewhere; the lean answer costs about what http_fetch's `/slow` page does,
 * and its bytes are the SDK's (dev/mock-mcp/server.test.ts compares them).
 */
function toLeanSearchCall(body: unknown, headers: IncomingMessage["headers"], scope: Scope): { id: string | number; query: string } | null {
  if (scope.changeAfter !== null || typeof body !== "object" || body === null) return null;
  const message = body as { jsonrpc?: unknown; id?: unknown; params?: { name?: unknown; arguments?: unknown; _meta?: Record<string, unknown> } };
  const meta = message.params?._meta;
  if (message.jsonrpc !== "2.0" || (typeof message.id !== "string" && typeof message.id !== "number")) return null;
  if (message.params?.name !== "search_code" || meta?.["io.modelcontextprotocol/protocolVersion"] !== MODERN_REVISION) return null;
  if (headers["mcp-protocol-version"] !== MODERN_REVISION || headers["mcp-method"] !== "tools/call" || headers["mcp-name"] !== "search_code") return null;
  if (!String(headers.accept ?? "").includes("application/json") || !String(headers["content-type"] ?? "").startsWith("application/json")) return null;
  const args = TOOLS.searchCode.inputSchema.safeParse(message.params.arguments ?? {});
  return args.success ? { id: message.id, query: args.data.query } : null;
}

/** The session-based revision the SDK's client and server settle on (the lean path serves no other). */
const SESSION_REVISION = "2025-11-25";

/**
 * The lean path's request in a session the SDK's transport opened (the caller checks the
 * `Mcp-Session-Id`): a well-formed `tools/call` of `search_code` at SESSION_REVISION, without the
 * 2026-07-28 envelope, accepting both JSON and SSE as that transport requires, with valid arguments,
 * on a server whose catalog does not change. Anything else (null) goes to the session's transport.
 * Why: the SDK's session transport costs about 1.3 ms of CPU a call in Node (same reason as above).
 */
function toLeanSessionSearchCall(body: unknown, headers: IncomingMessage["headers"], scope: Scope): { id: string | number; query: string } | null {
  if (scope.changeAfter !== null || typeof body !== "object" || body === null) return null;
  const message = body as { jsonrpc?: unknown; id?: unknown; params?: { name?: unknown; arguments?: unknown; _meta?: unknown } };
  if (message.jsonrpc !== "2.0" || (typeof message.id !== "string" && typeof message.id !== "number")) return null;
  if (message.params?.name !== "search_code" || message.params._meta !== undefined || headers["mcp-protocol-version"] !== SESSION_REVISION) return null;
  const accept = String(headers.accept ?? "");
  if (!accept.includes("application/json") || !accept.includes("text/event-stream") || !String(headers["content-type"] ?? "").startsWith("application/json"))
    return null;
  const args = TOOLS.searchCode.inputSchema.safeParse(message.params.arguments ?? {});
  return args.success ? { id: message.id, query: args.data.query } : null;
}

/** The SDK session transport's SSE answer to a completed tool call, byte for byte. */
function toLeanSessionAnswer(id: string | number, result: ReturnType<typeof searchCode>): string {
  return `event: message\ndata: ${JSON.stringify({ result, jsonrpc: "2.0", id })}\n\n`;
}

/** The SDK server's 2026-07-28 JSON answer to a completed tool call, byte for byte. */
function toLeanAnswer(id: string | number, result: ReturnType<typeof searchCode>): string {
  return JSON.stringify({
    result: { ...result, resultType: "complete", _meta: { "io.modelcontextprotocol/serverInfo": SERVER_INFO } },
    jsonrpc: "2.0",
    id,
  });
}

const HELP = `Usage: node dev/mock-mcp/server.ts [flags]   (a MOCK MCP server: its answers are fake)
  --port N      port on 127.0.0.1 (default 8790; 0 = ephemeral)
  --latency MS  how long each tool call takes (default 50; a server URL's latency_ms overrides it)
  -h, --help    this list`;

/** As dev/mock-model's: a refused command line is one line on stderr and exit 2. */
function die(message: string): never {
  process.stderr.write(`mock-mcp: ${message}\n`);
  process.exit(2);
}

/** `node dev/mock-mcp/server.ts [--port N] [--latency MS]`: parses its flags (an unknown one throws), then serves. */
export async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: { port: { type: "string", default: "8790" }, latency: { type: "string", default: "50" }, help: { type: "boolean", short: "h" } },
  });
  if (values.help === true) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const port = Number(values.port);
  if (values.port.trim() === "" || !Number.isInteger(port) || port < 0 || port > 65_535) die(`--port expects a port 0-65535, got "${values.port}"`);
  const latencyMs = Number(values.latency);
  if (values.latency.trim() === "" || !Number.isFinite(latencyMs) || latencyMs < 0) die(`--latency expects milliseconds >= 0, got "${values.latency}"`);
  const handle = await startMockMcp({ port, latencyMs });
  process.stdout.write(`mock-mcp listening on ${handle.url}/mcp (this is a MOCK MCP server: its answers are fake)\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv.slice(2)).catch((e: unknown) => die(e instanceof Error ? e.message : String(e)));
