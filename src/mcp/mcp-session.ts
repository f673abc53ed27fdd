// One connection to an MCP server through the official TypeScript SDK client
// (@modelcontextprotocol/client, pinned), over Streamable HTTP in either protocol era. The SDK is
// loaded with a dynamic import(), so a Worker pays its startup only for swarms that use MCP.
// It knows nothing of swarms: the caller supplies the guarded fetch, the credential and the era.
import type { McpEra, McpListedTool } from "../core/mcp-catalog.ts";
import { toErrorMessage } from "../core/error-message.ts";

export type { McpEra };

export interface McpConnectSettings {
  url: string;
  /** The guarded fetch (src/mcp/guarded-fetch.ts). */
  fetch: typeof fetch;
  /** Sent as `Authorization: Bearer <value>`; null = none. Never logged or put in an error. */
  bearer: string | null;
  /** For the connect (probe or handshake). */
  timeoutMs: number;
  /**
   * The era pinned at submit, given to the SDK as `prior`: a lane then reads no tool list and sends
   * no `server/discover` probe (a 2026-07-28 server costs no round trip, a session-based one its
   * `initialize` handshake). Absent = negotiate (`server/discover`, else the 2025 `initialize`).
   */
  era?: McpEra;
}

/** A tool call's answer: the content blocks and the server's isError flag. */
export interface McpCallAnswer {
  isError: boolean;
  content: readonly unknown[];
  structuredContent?: unknown;
}

export interface McpSession {
  era: McpEra;
  /** The protocol revision the client speaks with the server (`2026-07-28`, `2025-11-25`, …); null = not known. */
  protocolVersion(): string | null;
  /** The session's `Mcp-Session-Id` (session-based servers); null = sessionless. */
  sessionId(): string | null;
  listTools(timeoutMs: number): Promise<McpListedTool[]>;
  /** `definition` is the pinned tool, so the SDK needs no `tools/list` to mirror headers or validate. */
  callTool(tool: McpListedTool, args: Record<string, unknown>, timeoutMs: number, signal: AbortSignal): Promise<McpCallAnswer>;
  /** The server said its tool list changed (`notifications/tools/list_changed`). */
  onToolsChanged(handler: () => void): void;
  close(): Promise<void>;
}

const CLIENT_INFO = { name: "edgeswarm", version: "1.0.0" };

export async function openMcpSession(settings: McpConnectSettings): Promise<McpSession> {
  const sdk = await import("@modelcontextprotocol/client");
  const client = new sdk.Client(CLIENT_INFO, {
    capabilities: {},
    // Both eras: a 2026-07-28 server is found with `server/discover`, anything else gets the 2025 handshake.
    versionNegotiation: { mode: "auto" },
    // A swarm's agents have no user to ask: an elicitation (2026: an `input_required` result) fails the call.
    inputRequired: { autoFulfill: false },
  });
  const bearer = settings.bearer;
  const transport = new sdk.StreamableHTTPClientTransport(new URL(settings.url), {
    fetch: settings.fetch,
    ...(bearer === null ? {} : { authProvider: { token: async () => bearer } }),
    // The guarded fetch follows (and checks) redirects itself.
    redirectPolicy: "follow",
    requestInit: { redirect: "manual" },
    // A lost response stream is a failed call, not a reconnect loop holding a lane's slot.
    reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1_000, maxReconnectionDelay: 1_000, reconnectionDelayGrowFactor: 1 },
  });
  const prior =
    settings.era === undefined
      ? undefined
      : settings.era.kind === "legacy"
        ? ({ kind: "legacy" } as const)
        : ({ kind: "modern", discover: JSON.parse(settings.era.discover_json) } as const);
  await client.connect(transport, { timeout: settings.timeoutMs, ...(prior === undefined ? {} : { prior }) });
  const discovered = client.getDiscoverResult();
  const era: McpEra = discovered === undefined ? { kind: "legacy" } : { kind: "modern", discover_json: JSON.stringify(discovered) };
  return {
    era,
    protocolVersion: () => transport.protocolVersion ?? null,
    sessionId: () => transport.sessionId ?? null,
    listTools: async (timeoutMs) => {
      const listed = await client.listTools(undefined, { timeout: timeoutMs, cacheMode: "bypass" });
      return listed.tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema as Record<string, unknown> }));
    },
    callTool: async (tool, args, timeoutMs, signal) => {
      const result = await client.callTool(
        { name: tool.name, arguments: args },
        {
          timeout: timeoutMs,
          signal,
          toolDefinition: { name: tool.name, description: tool.description, inputSchema: tool.inputSchema as { type: "object" } },
        },
      );
      return {
        isError: result.isError === true,
        content: Array.isArray(result.content) ? result.content : [],
        ...(result.structuredContent === undefined ? {} : { structuredContent: result.structuredContent }),
      };
    },
    onToolsChanged: (handler) => {
      client.setNotificationHandler("notifications/tools/list_changed", handler);
    },
    close: async () => {
      try {
        await client.close();
      } catch (error) {
        console.warn(JSON.stringify({ event: "mcp_close_failed", error: toErrorMessage(error) }));
      }
    },
  };
}

/**
 * Why an MCP request failed, in words the model (or a 400's detail) can use. HTTP statuses come
 * from the SDK's SdkHttpError; JSON-RPC errors from its ProtocolError; an elicitation the client
 * cannot answer from MissingRequiredClientCapabilityError. The credential never appears: the SDK's
 * messages name the URL and the status, not the request's headers.
 */
export function describeMcpFailure(error: unknown, timeoutMs: number): string {
  if (typeof error !== "object" || error === null) return String(error);
  const named = error as { name?: unknown; code?: unknown; status?: unknown; data?: { status?: unknown }; message?: unknown };
  const message = clip(typeof named.message === "string" ? named.message : toErrorMessage(error));
  const status = typeof named.status === "number" ? named.status : typeof named.data?.status === "number" ? named.data.status : null;
  if (named.code === "REQUEST_TIMEOUT" || named.name === "TimeoutError" || /timed out/i.test(message)) {
    return `the server did not answer within ${Math.round(timeoutMs / 1_000)} s (timeout_s)`;
  }
  if (status === 401 || status === 403 || named.name === "UnauthorizedError") {
    return `the server refused the credentials (HTTP ${status ?? 401}); check the swarm's mcp_servers credential`;
  }
  if (status === 429) return "the server is rate limiting (HTTP 429); try again later or make fewer calls";
  if (status !== null) return `the server answered HTTP ${status}: ${message}`;
  if (named.name === "MissingRequiredClientCapabilityError" || /elicit|input.required/i.test(message)) {
    return "the tool asked for user input (elicitation), which a swarm's agents cannot give";
  }
  if (typeof named.code === "number") return `the server answered a JSON-RPC error ${named.code}: ${message}`;
  if (named.name === "EgressRefused" || named.name === "McpCredentialError") return message;
  return `the server could not be reached: ${message}`;
}

/**
 * The failure's class for a trace's `error.type` (low cardinality, as the OTel MCP conventions ask):
 * the JSON-RPC error code, the HTTP status, `timeout`, `elicitation`, `egress_refused`,
 * `credential` or `unreachable`.
 */
export function classifyMcpFailure(error: unknown): string {
  if (typeof error !== "object" || error === null) return "unreachable";
  const named = error as { name?: unknown; code?: unknown; status?: unknown; data?: { status?: unknown }; message?: unknown };
  const message = typeof named.message === "string" ? named.message : "";
  if (named.code === "REQUEST_TIMEOUT" || named.name === "TimeoutError" || /timed out/i.test(message)) return "timeout";
  const status = typeof named.status === "number" ? named.status : typeof named.data?.status === "number" ? named.data.status : null;
  if (status !== null) return String(status);
  if (named.name === "UnauthorizedError") return "401";
  if (named.name === "MissingRequiredClientCapabilityError" || /elicit|input.required/i.test(message)) return "elicitation";
  if (typeof named.code === "number") return String(named.code);
  if (named.name === "EgressRefused") return "egress_refused";
  if (named.name === "McpCredentialError") return "credential";
  return "unreachable";
}

function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
