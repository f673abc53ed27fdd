// The MCP tools of one lane: one client per server (opened on the first call, closed when the lane
// ends), never one per task. Each call holds a per-server concurrency slot, and each of its HTTP
// requests, until its headers arrive, a slot of the invocation's header gate through the tools'
// share (slotted-fetch.ts), as http_fetch and webhooks do, so tool calls cannot starve the model. Every failure — isError, a JSON-RPC error,
// a timeout, 401/403/429, a dead server, an elicitation, a tool whose definition changed since
// submit — is a tool result the model reads (`{"error": …}`); a call never throws into the loop.
import type { ChatCompletionTool } from "openai/resources/chat/completions";
import { toToolError } from "../../../src/core/agent-conversation.ts";
import { hashMcpTool, toMcpFunctionTool, type McpListedTool, type PinnedMcpServer, type PinnedMcpTool } from "../../../src/core/mcp-catalog.ts";
import { toMcpResultText } from "../../../src/core/mcp-result.ts";
import type { ToolCall } from "../../../src/core/tool-calls.ts";
import { createGuardedFetch } from "../../../src/mcp/guarded-fetch.ts";
import { classifyMcpFailure, describeMcpFailure, openMcpSession, type McpSession } from "../../../src/mcp/mcp-session.ts";
import { createHeaderGate, type HeaderGate } from "../header-gate.ts";
import { untilAborted, type ToolResult } from "./http-fetch.ts";
import { toSlottedFetch, type TakeSlot } from "./slotted-fetch.ts";
import type { SecretBox } from "../../../src/secrets/secret-box.ts";

/** A pinned credential this agent cannot open: its message is safe to show (it names the secret, not its value). */
class McpCredentialError extends Error {
  override readonly name = "McpCredentialError";
}

export interface McpToolSettings {
  fetch: typeof fetch;
  allowPrivate: boolean;
  /** Characters of a tool's answer the model gets at most. */
  maxResultChars: number;
  /** Calls one lane runs at once against one server. */
  perServerConcurrency: number;
  maxRedirects: number;
  /** Opens a server's pinned credential (the tenant's secret) in this lane's memory; null = SECRETS_KEY unset. */
  secretBox: SecretBox | null;
}

/** One MCP call as transcripts, traces and logs show it. Never holds arguments, answers or credentials. */
export interface McpCallNote {
  /** The spec's name for the server. */
  server: string;
  /** The tool's name on the server. */
  tool: string;
  latencyMs: number;
  /** UTF-8 bytes of the answer the model got (after placeholders and the result cap). */
  bytes: number;
  /** What went wrong, as the model was told (`isError` when the tool said so); null = none. */
  error: string | null;
  /** Its low-cardinality class (a trace's error.type): tool_error, timeout, an HTTP status, a JSON-RPC code, …; null = none. */
  errorType: string | null;
  /** The server's host and port (a trace's server.address and server.port). */
  address: string;
  port: number;
  /** The protocol revision spoken; null = the call never reached a session. */
  protocolVersion: string | null;
}

/** A tool result with the call's note (absent: no such MCP tool). */
export type McpToolResult = ToolResult & { mcp?: McpCallNote };

export interface McpTools {
  definitions: ChatCompletionTool[];
  handles(name: string): boolean;
  run(call: ToolCall): Promise<McpToolResult>;
  close(): Promise<void>;
}

/** A failed call rechecks the catalog at most this often (a changed tool's calls fail until then). */
const RECHECK_AFTER_FAILURE_MS = 5_000;

interface ServerState {
  pinned: PinnedMcpServer;
  tools: Map<string, PinnedMcpTool>;
  session: Promise<McpSession> | null;
  slots: HeaderGate;
  /** Pinned tools whose definition on the server no longer matches the pin (or that it dropped). */
  changed: Set<string>;
  /** The server said its list changed: check before the next call. */
  stale: boolean;
  checkedAt: number;
  checking: Promise<void> | null;
}

/**
 * `takeSlot` is the lane's share of the invocation's header gate (null: no gate); `bearer` the
 * decrypted credential per server name (held in this lane's memory only).
 */
export function createMcpTools(
  tenant: string,
  servers: readonly PinnedMcpServer[],
  settings: McpToolSettings,
  takeSlot: TakeSlot | null,
  now: () => number = Date.now,
  onCall: (note: McpCallNote) => void = logMcpCall,
): McpTools {
  const fetchFn = createGuardedFetch({
    // Each hop, a redirect's too, takes its own slot.
    fetch: takeSlot === null ? settings.fetch : toSlottedFetch(settings.fetch, takeSlot),
    allowPrivate: settings.allowPrivate,
    maxRedirects: settings.maxRedirects,
  });
  /** Each exposed tool with its server and its definition as the SDK's callTool takes it (the input schema parsed once, not per call). */
  const byExposed = new Map<string, { state: ServerState; tool: PinnedMcpTool; definition: McpListedTool }>();
  const states: ServerState[] = [];
  const definitions: ChatCompletionTool[] = [];
  for (const pinned of servers) {
    const state: ServerState = {
      pinned,
      tools: new Map(pinned.tools.map((t) => [t.tool, t])),
      session: null,
      slots: createHeaderGate(settings.perServerConcurrency),
      changed: new Set(),
      stale: false,
      checkedAt: Number.NEGATIVE_INFINITY,
      checking: null,
    };
    states.push(state);
    for (const tool of pinned.tools) {
      const definition = { name: tool.tool, description: tool.description, inputSchema: JSON.parse(tool.input_schema_json) as Record<string, unknown> };
      byExposed.set(tool.exposed, { state, tool, definition });
      definitions.push(toMcpFunctionTool(pinned.name, tool) as ChatCompletionTool);
    }
  }

  /** The credential's value, opened only here, held only by the session's auth provider. */
  const bearerOf = async (pinned: PinnedMcpServer): Promise<string | null> => {
    const credential = pinned.credential;
    if (credential === undefined) return null;
    const value = settings.secretBox === null ? null : await settings.secretBox.open(tenant, credential.name, credential);
    if (value === null) {
      throw new McpCredentialError(
        `the credential "${credential.name}" could not be opened on this agent (its SECRETS_KEY is unset or differs from the orchestrator's)`,
      );
    }
    return value;
  };

  const session = (state: ServerState): Promise<McpSession> => {
    if (state.session === null) {
      const opening = bearerOf(state.pinned).then((bearer) =>
        openMcpSession({ url: state.pinned.url, fetch: fetchFn, bearer, timeoutMs: state.pinned.timeout_s * 1_000, era: state.pinned.era }),
      );
      state.session = opening.then((s) => {
        s.onToolsChanged(() => {
          state.stale = true;
        });
        return s;
      });
      // A failed connect is tried again by the next call, not remembered as the server's state.
      opening.catch(() => {
        state.session = null;
      });
    }
    return state.session;
  };

  /** Reads the server's list once and marks each pinned tool whose definition no longer hashes the same. */
  const recheck = (state: ServerState): Promise<void> => {
    state.checking ??= (async () => {
      state.stale = false;
      state.checkedAt = now();
      const listed = await (await session(state)).listTools(state.pinned.timeout_s * 1_000);
      const hashes = new Map<string, string>();
      for (const tool of listed) hashes.set(tool.name, await hashMcpTool(tool));
      for (const tool of state.tools.values()) {
        if (hashes.get(tool.tool) !== tool.hash) state.changed.add(tool.tool);
        else state.changed.delete(tool.tool);
      }
    })()
      .catch(() => {})
      .finally(() => {
        state.checking = null;
      });
    return state.checking;
  };

  const changedMessage = (state: ServerState, tool: PinnedMcpTool): string =>
    `${tool.exposed}: the MCP server ${state.pinned.name} changed this tool's definition since the swarm started; it is not called, so that no other tool than the one pinned at submit runs`;

  const run = async (call: ToolCall): Promise<McpToolResult> => {
    const found = byExposed.get(call.name);
    if (found === undefined) return { ok: false, content: toToolError(`there is no MCP tool named "${call.name}"`) };
    const { state, tool, definition } = found;
    const target = new URL(state.pinned.url);
    const note: McpCallNote = {
      server: state.pinned.name,
      tool: tool.tool,
      latencyMs: 0,
      bytes: 0,
      error: null,
      errorType: null,
      address: target.hostname,
      port: target.port === "" ? (target.protocol === "https:" ? 443 : 80) : Number(target.port),
      protocolVersion: null,
    };
    const result = await callTool(state, tool, definition, call, note);
    onCall(note);
    return { ...result, mcp: note };
  };

  /** One call of a found tool; fills in `note` (latency, bytes, error) as it goes. */
  const callTool = async (state: ServerState, tool: PinnedMcpTool, definition: McpListedTool, call: ToolCall, note: McpCallNote): Promise<ToolResult> => {
    const refuse = (errorType: string, message: string): ToolResult => {
      note.errorType = errorType;
      note.error = message;
      return { ok: false, content: toToolError(message) };
    };
    if (!call.arguments.ok) return refuse("invalid_arguments", `${call.name}: ${call.arguments.error}`);
    if (state.stale) await recheck(state);
    if (state.changed.has(tool.tool)) return refuse("tool_changed", changedMessage(state, tool));
    const release = await state.slots.acquire();
    const started = now();
    const timeoutMs = state.pinned.timeout_s * 1_000;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
    try {
      const open = await untilAborted(session(state), controller.signal);
      note.protocolVersion = open.protocolVersion();
      const answer = await untilAborted(open.callTool(definition, call.arguments.value, timeoutMs, controller.signal), controller.signal);
      const { text } = toMcpResultText(answer.content, answer.structuredContent, settings.maxResultChars);
      note.bytes = utf8Bytes(text);
      if (!answer.isError) return { ok: true, content: text };
      // The OTel MCP conventions' error.type for a result with isError.
      note.errorType = "tool_error";
      note.error = "isError";
      if (await changedSince(state, tool)) return refuse("tool_changed", changedMessage(state, tool));
      return { ok: false, content: toToolError(`${tool.exposed} failed: ${text}`) };
    } catch (error) {
      const timedOut = controller.signal.aborted;
      const reason = timedOut ? describeMcpFailure({ code: "REQUEST_TIMEOUT" }, timeoutMs) : describeMcpFailure(error, timeoutMs);
      note.errorType = timedOut ? "timeout" : classifyMcpFailure(error);
      note.error = reason;
      if (!timedOut && (await changedSince(state, tool))) return refuse("tool_changed", changedMessage(state, tool));
      return { ok: false, content: toToolError(`${tool.exposed} (MCP server ${state.pinned.name}): ${reason}`) };
    } finally {
      clearTimeout(timer);
      release();
      note.latencyMs = now() - started;
    }
  };

  /** After a failed call: has the tool changed on the server? (a changed schema is the usual cause). */
  const changedSince = async (state: ServerState, tool: PinnedMcpTool): Promise<boolean> => {
    if (state.stale || now() - state.checkedAt >= RECHECK_AFTER_FAILURE_MS) await recheck(state);
    return state.changed.has(tool.tool);
  };

  return {
    definitions,
    handles: (name) => byExposed.has(name),
    run,
    close: async () => {
      await Promise.allSettled(states.map(async (state) => (state.session === null ? undefined : (await state.session).close())));
    },
  };
}

const encoder = new TextEncoder();

function utf8Bytes(text: string): number {
  return encoder.encode(text).length;
}

/**
 * One line per failed MCP call in the Worker's logs (Workers Logs / `wrangler tail`). A call that
 * succeeded is in its task's transcript and trace, as an http_fetch is: a line for each one cost
 * more CPU than the rest of the call's own work (about 1 ms in the agent's workerd and wrangler's
 * Node process together under `wrangler dev`, npm run bench:mcp -- --cpu; docs/benchmarks.md).
 */
export function logMcpCall(note: McpCallNote): void {
  if (note.errorType === null) return;
  console.log(JSON.stringify({ event: "mcp_call", ...note }));
}
