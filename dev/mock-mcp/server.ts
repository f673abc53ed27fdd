// A MOCK MCP server for local runs, tests and benchmarks: a code-search server's tools over
// Streamable HTTP in both protocol eras, with latency and fault injection. Its answers are fake.
// Built on the official server SDK (@modelcontextprotocol/server), so the wire is the SDK's:
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
import { createMcpHandler, inputRequired, McpServer, ProtocolError, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { z } from "zod";

export interface MockMcpOptions {
  port?: number;
  /** Default latency of a tool call, ms. */
  latencyMs?: number;
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
  let stats = emptyStats();
  let running = 0;
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const catalogChanged = (scope: Scope): boolean => scope.changeAfter !== null && (stats.calls[scope.key] ?? 0) > scope.changeAfter;

  const buildServer = (scope: Scope): McpServer => {
    const server = new McpServer({ name: "mock-mcp (MOCK code search)", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
    const timed = async <T>(work: () => Promise<T> | T, notify?: () => Promise<void>): Promise<T> => {
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
    const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });
    const changed = catalogChanged(scope);
    const searchInput = changed ? z.object({ query: z.string(), limit: z.number().int() }) : z.object({ query: z.string() });
    server.registerTool(
      "search_code",
      { description: "[mock] Search the repository's code for a string; answers matching lines as path:line: text.", inputSchema: searchInput },
      async (args, ctx) =>
        timed(
          () => {
            const query = String((args as { query: string }).query).toLowerCase();
            const hits = Object.entries(FILES).flatMap(([path, body]) =>
              body
                .split("\n")
                .map((line, i) => ({ path, line: i + 1, text: line }))
                .filter((l) => query.split(/\s+/).some((w) => w !== "" && l.text.toLowerCase().includes(w))),
            );
            return text(hits.length === 0 ? `[mock] no match for "${query}"` : hits.map((h) => `${h.path}:${h.line}: ${h.text}`).join("\n"));
          },
          () => ctx.mcpReq.notify({ method: "notifications/tools/list_changed" }),
        ),
    );
    server.registerTool(
      "read_file",
      { description: "[mock] Read a file of the repository by its path.", inputSchema: z.object({ path: z.string() }) },
      async ({ path }) => timed(() => (FILES[path] === undefined ? { isError: true, ...text(`[mock] no file ${path}`) } : text(FILES[path]))),
    );
    server.registerTool("slow_search", { description: "[mock] A search that takes 5 seconds.", inputSchema: z.object({ query: z.string() }) }, async () => {
      await sleep(5_000);
      return text("[mock] slow result");
    });
    server.registerTool("huge_result", { description: "[mock] Answers 1 MiB of text.", inputSchema: z.object({}) }, async () =>
      timed(() => text("x".repeat(HUGE_RESULT_BYTES))),
    );
    server.registerTool("failing_tool", { description: "[mock] Always fails (isError).", inputSchema: z.object({}) }, async () =>
      timed(() => ({ isError: true, ...text("[mock] the index is rebuilding") })),
    );
    server.registerTool("rpc_error_tool", { description: "[mock] Always answers a JSON-RPC error.", inputSchema: z.object({}) }, async () =>
      timed(() => {
        throw new ProtocolError(-32603, "[mock] internal failure of the search backend");
      }),
    );
    server.registerTool("image_tool", { description: "[mock] Answers text and an image.", inputSchema: z.object({}) }, async () =>
      timed(() => ({
        content: [
          { type: "text" as const, text: "[mock] a chart:" },
          { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" },
        ],
      })),
    );
    server.registerTool("ask_user", { description: "[mock] Asks the user to confirm (elicitation).", inputSchema: z.object({}) }, async (_args, ctx) => {
      if (ctx.mcpReq.inputResponses === undefined && isModern(ctx.http?.req)) {
        return inputRequired({ inputRequests: { confirm: inputRequired.elicit({ message: "Go on?", requestedSchema: z.object({ ok: z.boolean() }) }) } });
      }
      const answer = await ctx.mcpReq.elicitInput({
        mode: "form",
        message: "Go on?",
        requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } },
      });
      return text(`[mock] the user said ${answer.action}`);
    });
    return server;
  };

  const dual = new Map<string, ReturnType<typeof createMcpHandler>>();
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

  const handle = async (request: Request, scope: Scope, sessionEra: boolean): Promise<Response> => {
    if (!sessionEra) {
      const handler = createMcpHandler(() => buildServer(scope), { legacy: "stateless" });
      dual.set(scope.key, handler);
      return handler.fetch(request);
    }
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
    const scope: Scope = {
      key,
      latencyMs: Number(url.searchParams.get("latency_ms") ?? defaultLatency),
      changeAfter: url.searchParams.has("catalog_change_after") ? Number(url.searchParams.get("catalog_change_after")) : null,
    };
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

function emptyStats(): MockMcpStats {
  return { listReads: {}, calls: {}, maxConcurrentCalls: 0, eras: { modern: 0, legacy: 0 }, authorizations: [], requests: {} };
}

/** A 2026-07-28 request carries the protocol version in its `_meta` envelope. */
function isModern(request: Request | undefined): boolean {
  return request?.headers.get("mcp-protocol-version") === "2026-07-28";
}

function parseMessage(body: Buffer): { method?: string; modern: boolean } | null {
  try {
    const parsed = JSON.parse(body.toString("utf8")) as { method?: unknown; params?: { _meta?: Record<string, unknown> } };
    const meta = parsed.params?._meta ?? {};
    const modern = Object.keys(meta).some((k) => k.startsWith("io.modelcontextprotocol/"));
    return { ...(typeof parsed.method === "string" ? { method: parsed.method } : {}), modern };
  } catch {
    return null;
  }
}

/** `node dev/mock-mcp/server.ts [--port N] [--latency MS]`. */
export async function main(argv: string[]): Promise<void> {
  const arg = (name: string): string | undefined => {
    const at = argv.indexOf(name);
    return at < 0 ? undefined : argv[at + 1];
  };
  const handle = await startMockMcp({ port: Number(arg("--port") ?? 8790), latencyMs: Number(arg("--latency") ?? 50) });
  process.stdout.write(`mock-mcp listening on ${handle.url}/mcp (this is a MOCK MCP server: its answers are fake)\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv.slice(2));
