// What you see of each MCP call, end to end in workerd: the real SwarmRoom keeps it in the task's
// transcript (server, tool, latency, bytes, error) from the lane's checkpoints, and the lane's
// execute_tool span carries the OTel MCP attributes to the global setup's OTLP receiver. The mock
// MCP server (dev/mock-mcp) answers search_code and fails failing_tool (isError).
import { createExecutionContext, createMessageBatch, getQueueResult, type MessageBatchMessage } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { PinnedMcpServer } from "../../../src/core/mcp-catalog.ts";
import { LimitsSchema, McpServerSpecSchema } from "../../../src/core/spec-schema.ts";
import type { Ticket } from "../../../src/core/ticket.ts";
import { formatTraceparent } from "../../../src/core/trace-context.ts";
import type { TraceSpan } from "../../../src/core/trace-span.ts";
import { createCatalogReader, MCP_MAX_REDIRECTS } from "../../../src/mcp/read-catalogs.ts";
import { createTaskDeps } from "../composition.ts";
import { consumeTasks } from "../consume-tasks.ts";
import { startRoomSwarm, tickets, waitFor, type RoomSwarm } from "./room-swarm.ts";

const TENANT = "tn_mcpseen";
type ReceivedSpan = TraceSpan & { service: string };

const readCatalogs = createCatalogReader({ fetch: (input, init) => fetch(input, init), allowPrivate: true, maxRedirects: MCP_MAX_REDIRECTS });

async function pin(path: string, tools: string[]): Promise<PinnedMcpServer[]> {
  const read = await readCatalogs([McpServerSpecSchema.parse({ name: "code", url: `${env.MOCK_MCP_URL}${path}`, tools })], [], async () => null);
  if (!read.ok) throw new Error(`catalog refused: ${JSON.stringify(read.error)}`);
  return read.value;
}

async function startSwarm(catalog: PinnedMcpServer[], label: string): Promise<RoomSwarm> {
  return startRoomSwarm({
    swarmId: `sw_mcpseen${label}${Date.now().toString(36)}`,
    tenant: TENANT,
    spec: {
      name: `mcp seen ${label}`,
      model: "mock-1",
      mcp_servers: catalog.map((c) => McpServerSpecSchema.parse({ name: c.name, url: c.url, timeout_s: c.timeout_s })),
      limits: LimitsSchema.parse({ concurrency: 10 }),
    },
    tasks: [
      { id: "found", prompt: "Use mcp__code__search_code." },
      { id: "broken", prompt: "Use mcp__code__failing_tool." },
    ],
    createdAt: Date.now(),
    origin: { kind: "api" },
    mcpCatalog: catalog,
  });
}

/** Runs the swarm's tasks in a consumer-hosted lane with the agent's own composition (tools may reach the mock on loopback). */
async function deliver(message: MessageBatchMessage<unknown>): Promise<void> {
  const batch = createMessageBatch("edgeswarm-tasks", [message]);
  const ctx = createExecutionContext();
  await consumeTasks(batch, createTaskDeps({ ...env, AGENT_LANE_HOST: "consumer", ALLOW_PRIVATE_NETWORK: "true" }));
  expect((await getQueueResult(batch, ctx)).retryMessages).toEqual([]);
}

describe("each MCP call, as transcripts and traces show it", { timeout: 40_000 }, () => {
  it.each([
    ["/mcp?latency_ms=5", "2026-07-28"],
    ["/session/mcp?latency_ms=5", null],
  ])("%s: the transcript lists server, tool, latency, bytes and error; the execute_tool span carries the MCP attributes", async (path, version) => {
    const catalog = await pin(path, ["search_code", "failing_tool"]);
    const swarm = await startSwarm(catalog, version === null ? "l" : "m");
    const [message] = tickets(swarm.swarmId, 1);
    const traceId = `9e${Date.now().toString(16).padStart(30, "0")}`.slice(0, 32);
    await deliver({
      ...message,
      body: { ...(message?.body as Ticket), traceparent: formatTraceparent({ traceId, spanId: "00f067aa0ba902b7", sampled: true }) },
    } as MessageBatchMessage<unknown>);
    expect((await swarm.results()).map((r) => r.state)).toEqual(["succeeded", "succeeded"]);

    const found = await swarm.stub.getTranscript(TENANT, "found");
    expect(found?.mcp_calls).toEqual([
      {
        tool_call_id: expect.any(String),
        attempt: 1,
        turn: 1,
        server: "code",
        tool: "search_code",
        latency_ms: expect.any(Number),
        bytes: expect.any(Number),
        error: null,
      },
    ]);
    const [call] = found?.mcp_calls ?? [];
    // The bytes of the answer the model read, which the tool message holds.
    const toolMessage = found?.messages.find((m) => m.role === "tool");
    expect(call?.bytes).toBe(new TextEncoder().encode(toolMessage?.content ?? "").length);
    expect(call?.bytes).toBeGreaterThan(0);
    expect(call?.latency_ms).toBeGreaterThanOrEqual(0);
    const broken = await swarm.stub.getTranscript(TENANT, "broken");
    expect(broken?.mcp_calls).toMatchObject([{ server: "code", tool: "failing_tool", error: "isError" }]);

    let spans: ReceivedSpan[] = [];
    expect(
      await waitFor(async () => {
        spans = (await (await fetch(`${env.OTEL_EXPORTER_OTLP_ENDPOINT}/spans?swarm_id=${swarm.swarmId}`)).json()) as ReceivedSpan[];
        return spans.filter((s) => s.attributes["gen_ai.operation.name"] === "execute_tool").length === 2;
      }, 20_000),
    ).toBe(true);
    const tools = spans.filter((s) => s.attributes["gen_ai.operation.name"] === "execute_tool");
    const host = new URL(env.MOCK_MCP_URL);
    const common = {
      "mcp.method.name": "tools/call",
      "server.address": host.hostname,
      "server.port": Number(host.port),
      "network.transport": "tcp",
      "network.protocol.name": "http",
      "edgeswarm.mcp.server": "code",
    };
    const ok = tools.find((s) => s.name === "execute_tool mcp__code__search_code");
    expect(ok).toMatchObject({
      status: { code: 0 },
      attributes: { ...common, "edgeswarm.mcp.tool": "search_code", "edgeswarm.mcp.result_bytes": call?.bytes },
    });
    expect(ok?.attributes).not.toHaveProperty("error.type");
    const failed = tools.find((s) => s.name === "execute_tool mcp__code__failing_tool");
    expect(failed).toMatchObject({
      status: { code: 2, message: "tool_error" },
      attributes: { ...common, "edgeswarm.mcp.tool": "failing_tool", "error.type": "tool_error" },
    });
    // The protocol revision spoken: the sessionless one for /mcp, a session-based one for /session/mcp.
    const spoken = ok?.attributes["mcp.protocol.version"];
    if (version !== null) expect(spoken).toBe(version);
    else {
      expect(String(spoken)).toMatch(/^20\d\d-\d\d-\d\d$/);
      expect(spoken).not.toBe("2026-07-28");
    }
  });
});
