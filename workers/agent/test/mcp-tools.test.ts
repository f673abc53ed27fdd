// MCP tools end to end in workerd: the catalog read and pinned at submit (createCatalogReader, as
// the orchestrator runs it), a real SwarmRoom, lanes with the mock model, and the mock MCP server
// (dev/mock-mcp, started by the global setup) in both protocol eras: the 2026-07-28 sessionless one
// (/mcp) and the session-based 2025 one (/session/mcp). Every failure of a tool is a tool result
// the model reads; a task never fails because a tool did.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { PinnedMcpServer } from "../../../src/core/mcp-catalog.ts";
import { LimitsSchema, McpServerSpecSchema, type SwarmSpec } from "../../../src/core/spec-schema.ts";
import { createCatalogReader, MCP_MAX_REDIRECTS } from "../../../src/mcp/read-catalogs.ts";
import { createSecretBox } from "../../../src/secrets/secret-box.ts";
import { createModelClient, type ModelRequest } from "../../../src/model/model-client.ts";
import { consumeTasks } from "../consume-tasks.ts";
import { MODEL_RESERVED_HEADER_SLOTS } from "../lane-invocation.ts";
import { toSwarmRooms } from "../swarm-rooms.ts";
import { logMcpCall, type McpCallNote } from "../tools/mcp-tools.ts";
import { DEFAULT_TOOL_SETTINGS, toToolEnvironment } from "../tools/swarm-tools.ts";
import { directGateway } from "./fake-gateway.ts";
import { LANE_DEFAULTS, startRoomSwarm, tickets, type RoomSwarm } from "./room-swarm.ts";

const TENANT = "tn_mcptests";
let counter = 0;

const noCredential = async () => null;
const readCatalogs = createCatalogReader({ fetch: (input, init) => fetch(input, init), allowPrivate: true, maxRedirects: MCP_MAX_REDIRECTS });

interface MockMcpStats {
  listReads: Record<string, number>;
  calls: Record<string, number>;
  maxConcurrentCalls: number;
  eras: { modern: number; legacy: number };
}

async function mcpStats(): Promise<MockMcpStats> {
  return (await (await fetch(`${env.MOCK_MCP_URL}/_stats`)).json()) as MockMcpStats;
}

/** A server spec on the mock; `path` with its query (a fault mode, a latency). */
const server = (path: string, fields: Record<string, unknown> = {}) =>
  McpServerSpecSchema.parse({ name: "code", url: `${env.MOCK_MCP_URL}${path}`, ...fields });

async function pin(path: string, fields: Record<string, unknown> = {}): Promise<PinnedMcpServer[]> {
  const read = await readCatalogs([server(path, fields)], [], noCredential);
  if (!read.ok) throw new Error(`catalog refused: ${JSON.stringify(read.error)}`);
  return read.value;
}

async function startSwarm(catalog: PinnedMcpServer[], prompts: string[], concurrency = 100, more: Partial<SwarmSpec> = {}): Promise<RoomSwarm> {
  counter += 1;
  return startRoomSwarm({
    swarmId: `sw_mcp${Date.now().toString(36)}${counter}`,
    tenant: TENANT,
    spec: {
      name: `mcp test ${counter}`,
      model: "mock-1",
      mcp_servers: catalog.map((c) => McpServerSpecSchema.parse({ name: c.name, url: c.url, timeout_s: c.timeout_s })),
      limits: LimitsSchema.parse({ concurrency }),
      ...more,
    },
    tasks: prompts.map((prompt, i) => ({ id: `t${i + 1}`, prompt })),
    createdAt: Date.now(),
    origin: { kind: "api" },
    mcpCatalog: catalog,
  });
}

/** Runs the swarm's tasks in one lane; returns the tool results the model read, by task prompt order. */
async function deliver(swarmId: string, network: typeof fetch = fetch, webhookSecret: string | null = null): Promise<ModelRequest[]> {
  const real = createModelClient({ baseURL: env.MODEL_BASE_URL, apiKey: env.MODEL_API_KEY });
  const requests: ModelRequest[] = [];
  const batch = createMessageBatch("edgeswarm-tasks", tickets(swarmId, 1));
  const ctx = createExecutionContext();
  await consumeTasks(batch, {
    ...LANE_DEFAULTS,
    rooms: toSwarmRooms(env.SWARM_ROOM),
    gateway: directGateway({
      complete: (request) => {
        const { headerSlot: _slot, ...data } = request;
        requests.push(structuredClone(data));
        return real.complete(request);
      },
    }),
    concurrency: 64,
    tools: toToolEnvironment({ ...DEFAULT_TOOL_SETTINGS, allowPrivate: true, secretsKey: env.SECRETS_KEY, webhookSecret }, network),
  });
  expect((await getQueueResult(batch, ctx)).retryMessages).toEqual([]);
  return requests;
}

/** Every tool result the model was sent, across the swarm's requests (deduplicated). */
function toolResults(requests: readonly ModelRequest[]): string[] {
  const seen = new Set<string>();
  for (const request of requests) {
    for (const message of request.messages) if (message.role === "tool" && typeof message.content === "string") seen.add(message.content);
  }
  return [...seen];
}

describe("the mcp_call log line", () => {
  const note: McpCallNote = {
    server: "code",
    tool: "search_code",
    latencyMs: 52,
    bytes: 80,
    error: null,
    errorType: null,
    address: "127.0.0.1",
    port: 8790,
    protocolVersion: "2026-07-28",
  };
  it.each([
    ["a call that succeeded", note, 0],
    ["a call the tool failed (isError)", { ...note, error: "isError", errorType: "tool_error" }, 1],
    ["a call that timed out", { ...note, error: "the server did not answer within 30 s (timeout_s)", errorType: "timeout" }, 1],
  ])("is written once for each failed call, never for one that succeeded: %s", (_name, call, lines) => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    try {
      logMcpCall(call);
      expect(log.mock.calls.map(([line]) => JSON.parse(String(line)) as unknown)).toEqual(lines === 0 ? [] : [{ event: "mcp_call", ...call }]);
    } finally {
      log.mockRestore();
    }
  });
});

describe("MCP at submit", () => {
  it.each([
    ["/mcp", "modern"],
    ["/session/mcp", "legacy"],
  ])("reads %s once and pins its tools with a hash each and its era (%s)", async (path, era) => {
    const before = (await mcpStats()).listReads[path] ?? 0;
    const [pinned] = await pin(path, { tools: ["search_code", "read_file"] });
    expect(pinned?.era.kind).toBe(era);
    expect(pinned?.tools.map((t) => [t.exposed, t.hash.length])).toEqual([
      ["mcp__code__search_code", 64],
      ["mcp__code__read_file", 64],
    ]);
    expect((await mcpStats()).listReads[path]).toBe(before + 1);
  });

  it("refuses a tool the server lacks, an unreachable server and a name collision, naming mcp_servers[i]", async () => {
    const unknown = await readCatalogs([server("/mcp", { tools: ["search_code", "deploy"] })], [], noCredential);
    expect(unknown.ok === false && unknown.error).toEqual([
      { path: "mcp_servers.0.tools.1", message: expect.stringContaining('the server has no tool "deploy"') },
    ]);
    const dead = await readCatalogs([server("/dead/mcp")], [], noCredential);
    expect(dead.ok === false && dead.error[0]?.path).toBe("mcp_servers.0");
    expect(dead.ok === false && dead.error[0]?.message).toMatch(/could not be read/);
    const collision = await readCatalogs([server("/mcp", { tools: ["read_file"] })], ["mcp__code__read_file"], noCredential);
    expect(collision.ok === false && collision.error[0]?.path).toBe("mcp_servers.0.tools");
    const metadata = await readCatalogs([McpServerSpecSchema.parse({ name: "meta", url: "http://169.254.169.254/mcp" })], [], noCredential);
    expect(metadata.ok === false && metadata.error[0]?.path).toBe("mcp_servers.0.url");
  });
});

describe("MCP tools in a swarm", () => {
  it.each([
    ["/mcp?latency_ms=5&era=modern", "modern"],
    ["/session/mcp?latency_ms=5&era=legacy", "legacy"],
  ])("agents call a %s server's tool and answer with its result; no tool list is read after submit", async (path) => {
    const catalog = await pin(path);
    const swarm = await startSwarm(catalog, [
      "Use mcp__code__search_code to find where tokens are checked.",
      "Use mcp__code__search_code to find database queries.",
    ]);
    const requests = await deliver(swarm.swarmId);
    const results = await swarm.results();
    expect(results.map((r) => r.state)).toEqual(["succeeded", "succeeded"]);
    // The model was offered the tools under their MCP names, with the server's description.
    const offered = requests[0]?.tools?.map((t) => (t.type === "function" ? t.function.name : ""));
    expect(offered).toContain("mcp__code__search_code");
    expect(toolResults(requests).join("\n")).toMatch(/\[mock\]|src\//);
    const stats = await mcpStats();
    expect(stats.listReads[path]).toBe(1);
    expect(stats.calls[path]).toBe(2);
  });

  it("turns every failure of a tool into a tool result; every task still succeeds", async () => {
    const [main] = await pin("/mcp?latency_ms=1&faults=1", { timeout_s: 1 });
    const [unauthorized] = await pin("/mcp?fail=401");
    const [limited] = await pin("/mcp?fail=429");
    const [dropping] = await pin("/mcp?fail=dead");
    if (main === undefined || unauthorized === undefined || limited === undefined || dropping === undefined) throw new Error("no catalog");
    const rename = (s: PinnedMcpServer, name: string): PinnedMcpServer => ({
      ...s,
      name,
      tools: s.tools.map((t) => ({ ...t, exposed: `mcp__${name}__${t.tool}` })),
    });
    const catalog = [main, rename(unauthorized, "auth"), rename(limited, "busy"), rename(dropping, "gone")];
    const prompts = [
      "Use mcp__code__failing_tool.",
      "Use mcp__code__rpc_error_tool.",
      "Use mcp__code__slow_search.",
      "Use mcp__code__huge_result.",
      "Use mcp__code__image_tool.",
      "Use mcp__code__ask_user.",
      "Use mcp__auth__search_code.",
      "Use mcp__busy__search_code.",
      "Use mcp__gone__search_code.",
    ];
    const swarm = await startSwarm(catalog, prompts);
    const requests = await deliver(swarm.swarmId);
    expect((await swarm.results()).map((r) => r.state)).toEqual(prompts.map(() => "succeeded"));
    const results = toolResults(requests);
    const resultFor = (fragment: RegExp): string | undefined => results.find((r) => fragment.test(r));
    expect(resultFor(/mcp__code__failing_tool failed: \[mock\] the index is rebuilding/)).toMatch(/^\{"error":/);
    expect(resultFor(/internal failure of the search backend/)).toMatch(/^\{"error":/);
    expect(resultFor(/mcp__code__slow_search.*did not answer within 1 s/)).toMatch(/^\{"error":/);
    expect(resultFor(/^x+\n\n\[truncated: the tool's answer is 1048576 characters/)).toBeDefined();
    expect(resultFor(/\[image \(image\/png, 8 bytes\) not shown/)).toBeDefined();
    expect(resultFor(/mcp__code__ask_user.*(user input|elicitation)/)).toMatch(/^\{"error":/);
    expect(resultFor(/mcp__auth__search_code.*refused the credentials \(HTTP 401\)/)).toBeDefined();
    expect(resultFor(/mcp__busy__search_code.*rate limiting \(HTTP 429\)/)).toBeDefined();
    expect(resultFor(/mcp__gone__search_code.*could not be reached/)).toBeDefined();
  });

  it("answers the model with an error once a tool's definition changed on the server, never calls a different tool silently", async () => {
    const path = "/mcp?latency_ms=1&catalog_change_after=1";
    const catalog = await pin(path, { tools: ["search_code"] });
    const swarm = await startSwarm(
      catalog,
      ["Use mcp__code__search_code.", "Use mcp__code__search_code.", "Use mcp__code__search_code."],
      // One task at a time: the first call is served by the pinned definition, the next ones by the changed one.
      1,
    );
    const requests = await deliver(swarm.swarmId);
    expect((await swarm.results()).map((r) => r.state)).toEqual(["succeeded", "succeeded", "succeeded"]);
    const results = toolResults(requests);
    expect(results.filter((r) => r.includes("changed this tool's definition since the swarm started")).length).toBeGreaterThan(0);
    expect(results.some((r) => r.includes("Input validation error"))).toBe(false);
  });

  it("sends the tenant's credential as a bearer token on every call; it is in no model request, result or stored catalog", async () => {
    const path = "/mcp?latency_ms=1&credential=lane";
    const secret = `tok_lane_${crypto.randomUUID()}`;
    // Sealed as the orchestrator seals it (the same SECRETS_KEY): the lane opens it in its memory.
    const sealed = await createSecretBox(env.SECRETS_KEY).seal(TENANT, "code_search", secret);
    const read = await readCatalogs([server(path, { credential: "code_search" })], [], async () => ({ sealed, bearer: secret }));
    if (!read.ok) throw new Error(JSON.stringify(read.error));
    expect(JSON.stringify(read.value)).not.toContain(secret);
    await fetch(`${env.MOCK_MCP_URL}/_reset`, { method: "POST" });
    const swarm = await startSwarm(read.value, ["Use mcp__code__search_code.", "Use mcp__code__search_code."]);
    const requests = await deliver(swarm.swarmId);
    const results = await swarm.results();
    expect(results.map((r) => r.state)).toEqual(["succeeded", "succeeded"]);
    const stats = (await (await fetch(`${env.MOCK_MCP_URL}/_stats`)).json()) as MockMcpStats & { authorizations: string[] };
    expect(stats.calls[path]).toBe(2);
    expect(stats.authorizations.length).toBeGreaterThanOrEqual(2);
    expect(stats.authorizations.every((a) => a === `Bearer ${secret}`)).toBe(true);
    expect(JSON.stringify(requests)).not.toContain(secret);
    expect(JSON.stringify(results)).not.toContain(secret);
    expect(JSON.stringify(await swarm.status())).not.toContain(secret);
  });

  it("answers the model with an error, and calls nothing, when the credential cannot be opened", async () => {
    const path = "/mcp?latency_ms=1&credential=wrongkey";
    const sealed = await createSecretBox("another-deployments-key").seal(TENANT, "code_search", "tok_unopenable");
    const read = await readCatalogs([server(path, { credential: "code_search" })], [], async () => ({ sealed, bearer: "tok_unopenable" }));
    if (!read.ok) throw new Error(JSON.stringify(read.error));
    const swarm = await startSwarm(read.value, ["Use mcp__code__search_code."]);
    const requests = await deliver(swarm.swarmId);
    expect((await swarm.results()).map((r) => r.state)).toEqual(["succeeded"]);
    expect(toolResults(requests).join("\n")).toMatch(/credential \\"code_search\\" could not be opened/);
    expect((await mcpStats()).calls[path] ?? 0).toBe(0);
  });

  it("holds MCP requests to the tools' share of the invocation's header slots", async () => {
    const path = "/mcp?latency_ms=50&cap=1";
    const catalog = await pin(path, { tools: ["search_code"] });
    await fetch(`${env.MOCK_MCP_URL}/_reset`, { method: "POST" });
    const swarm = await startSwarm(
      catalog,
      Array.from({ length: 24 }, () => "Use mcp__code__search_code."),
    );
    await deliver(swarm.swarmId);
    expect((await swarm.results()).every((r) => r.state === "succeeded")).toBe(true);
    const after = await mcpStats();
    expect(after.calls[path]).toBe(24);
    expect(after.listReads[path] ?? 0).toBe(0);
    // 6 header slots per invocation, all but one for tools; the mock answers its JSON after the latency.
    expect(after.maxConcurrentCalls).toBeLessThanOrEqual(LANE_DEFAULTS.headerSlots - MODEL_RESERVED_HEADER_SLOTS);
    expect(after.maxConcurrentCalls).toBeGreaterThan(0);
  });

  it("holds every tool's requests — http_fetch, a webhook and MCP alike — to the tools' share of the header slots", async () => {
    const catalog = await pin("/mcp?latency_ms=50", { tools: ["search_code"] });
    const page = `${env.MOCK_MCP_URL}/slow?ms=50`;
    const swarm = await startSwarm(
      catalog,
      // The mock model calls the three tools it is told of in one turn, in parallel.
      Array.from({ length: 24 }, (_, i) => `[mock:parallel=3] Task ${i + 1}: use http_fetch on ${page}, mcp__code__search_code and lookup_ticket.`),
      100,
      {
        tools: ["http_fetch", { name: "lookup_ticket", description: "Looks a ticket up.", url: page, parameters: { type: "object", properties: {} } }],
        http_allowlist: [new URL(page).host],
      },
    );
    // Counts the tools' requests waiting for headers: from the request until its Response resolves.
    const kinds = { http_fetch: 0, webhook: 0, mcp: 0 };
    let waiting = 0;
    let mostWaiting = 0;
    const counting: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      const path = new URL(request.url).pathname;
      kinds[path === "/mcp" ? "mcp" : request.method === "POST" ? "webhook" : "http_fetch"] += 1;
      waiting += 1;
      mostWaiting = Math.max(mostWaiting, waiting);
      try {
        return await fetch(input, init);
      } finally {
        waiting -= 1;
      }
    };
    await deliver(swarm.swarmId, counting, "a-webhook-secret-for-tests");
    expect((await swarm.results()).every((r) => r.state === "succeeded")).toBe(true);
    expect(kinds).toEqual({ http_fetch: 24, webhook: 24, mcp: 24 });
    expect(mostWaiting).toBeLessThanOrEqual(LANE_DEFAULTS.headerSlots - MODEL_RESERVED_HEADER_SLOTS);
    expect(mostWaiting).toBeGreaterThan(1);
    // 72 tool calls through 5 slots, on a shared machine.
  }, 30_000);
});
