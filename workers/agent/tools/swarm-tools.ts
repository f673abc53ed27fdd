// The tools of one swarm's sub-agents: their definitions as the model sees them (built-ins and the
// spec's webhook tools) and one runner that executes a normalized tool call by name. A tool never
// throws into the loop: every failure becomes a tool error the model reads.
import type { ChatCompletionTool } from "openai/resources/chat/completions";
import { toToolError } from "../../../src/core/agent-conversation.ts";
import { isScratchpadTool, SCRATCHPAD_TOOLS, toScratchpadRequest } from "../../../src/core/scratchpad.ts";
import type { ScratchpadRequest, ScratchpadResponse, ToolSpecWire } from "../../../src/core/swarm-contract.ts";
import type { ToolCall } from "../../../src/core/tool-calls.ts";
import type { ToolSettings } from "../../../src/core/env-settings.ts";
import { deriveWebhookKey } from "../../../src/core/webhook-signature.ts";
import { HTTP_FETCH_TOOL, runHttpFetch, type HttpFetchSettings } from "./http-fetch.ts";
import { runWebhook, type WebhookSettings } from "./webhook-tool.ts";
import { createMcpTools, type McpToolResult, type McpToolSettings } from "./mcp-tools.ts";
import { toSlottedFetch, type TakeSlot } from "./slotted-fetch.ts";
import type { PinnedMcpServer } from "../../../src/core/mcp-catalog.ts";
import { MCP_MAX_REDIRECTS } from "../../../src/mcp/read-catalogs.ts";
import { MAX_TOOL_RESULT_CHARS } from "../../../src/core/agent-limits.ts";
import { createSecretBox } from "../../../src/secrets/secret-box.ts";
import { toErrorMessage } from "../../../src/core/error-message.ts";

/** What the tools reach: the swarm's scratchpad, the network (with its limits) and the webhook secret. */
export interface ToolEnvironment {
  scratchpad(request: ScratchpadRequest): Promise<ScratchpadResponse>;
  http: Omit<HttpFetchSettings, "policy"> & { allowPrivate: boolean };
  webhook: WebhookSettings;
  mcp: McpToolSettings;
  /**
   * A connection slot for one outbound request of any tool — http_fetch, a webhook, MCP — from the
   * invocation's header gate through the tools' share; null = no gate.
   */
  toolSlot?: TakeSlot | null;
}

/** How the agents' tools reach the network (read from env by the composition root). */
export type { ToolSettings };

/** Redirects http_fetch follows (each target checked like the first). */
export const HTTP_FETCH_MAX_REDIRECTS = 5;
/** MCP calls one lane runs at once against one server. */
export const MCP_PER_SERVER_CONCURRENCY = 16;
/** A webhook's answer is cut at this many bytes. */
export const WEBHOOK_MAX_BYTES = 262_144;

/** The wrangler.toml defaults, without a webhook secret and with the SSRF guard on. */
export const DEFAULT_TOOL_SETTINGS: ToolSettings = {
  httpTimeoutMs: 10_000,
  httpMaxBytes: 262_144,
  webhookTimeoutMs: 15_000,
  webhookSecret: null,
  allowPrivate: false,
};

/** The tools' network side; `fetchFn` is the global fetch, or a test's. */
export function toToolEnvironment(settings: ToolSettings, globalFetch: typeof fetch, now: () => number = Date.now): Omit<ToolEnvironment, "scratchpad"> {
  // Workers' fetch throws "Illegal invocation" when called as a method of another object
  // (settings.fetch(...)): keep it bound to the global scope.
  const fetchFn: typeof fetch = (input, init) => globalFetch(input, init);
  return {
    http: {
      timeoutMs: settings.httpTimeoutMs,
      maxResponseBytes: settings.httpMaxBytes,
      maxRedirects: HTTP_FETCH_MAX_REDIRECTS,
      fetch: fetchFn,
      allowPrivate: settings.allowPrivate,
    },
    mcp: {
      fetch: fetchFn,
      allowPrivate: settings.allowPrivate,
      // What the conversation keeps of a tool result (longer ones are cut again there), less room for
      // the note saying the answer was cut.
      maxResultChars: MAX_TOOL_RESULT_CHARS - 200,
      perServerConcurrency: MCP_PER_SERVER_CONCURRENCY,
      maxRedirects: MCP_MAX_REDIRECTS,
      secretBox: settings.secretsKey === undefined || settings.secretsKey === null ? null : createSecretBox(settings.secretsKey),
    },
    webhook: {
      secret: settings.webhookSecret,
      allowPrivate: settings.allowPrivate,
      timeoutMs: settings.webhookTimeoutMs,
      maxResponseBytes: WEBHOOK_MAX_BYTES,
      fetch: fetchFn,
      now,
    },
  };
}

/** A tool's result; an MCP tool's carries its call's note (server, tool, latency, bytes, error). */
export type SwarmToolResult = McpToolResult;

export interface SwarmTools {
  definitions: ChatCompletionTool[];
  run(call: ToolCall, context: { swarmId: string; taskId: string }): Promise<SwarmToolResult>;
  /** Ends the tools' connections (the lane's MCP clients); the lane calls it when it ends. */
  close(): Promise<void>;
}

type Webhook = Exclude<ToolSpecWire, string>;

/**
 * The tools of one swarm. Webhook calls are signed with the swarm's tenant's key, derived from the
 * agent's WEBHOOK_SECRET (src/core/webhook-signature.ts), never with the secret itself.
 */
export function createSwarmTools(
  specs: readonly ToolSpecWire[],
  httpAllowlist: readonly string[],
  tenant: string,
  env: ToolEnvironment,
  mcpServers: readonly PinnedMcpServer[] = [],
): SwarmTools {
  const definitions: ChatCompletionTool[] = [];
  const webhooks = new Map<string, Webhook>();
  let scratchpad = false;
  let http = false;
  for (const spec of specs) {
    if (spec === "scratchpad") {
      scratchpad = true;
      definitions.push(...SCRATCHPAD_TOOLS.map((tool) => structuredClone(tool) as unknown as ChatCompletionTool));
    } else if (spec === "http_fetch") {
      http = true;
      definitions.push(structuredClone(HTTP_FETCH_TOOL) as unknown as ChatCompletionTool);
    } else {
      webhooks.set(spec.name, spec);
      definitions.push({
        type: "function",
        function: { name: spec.name, description: spec.description, parameters: JSON.parse(spec.parameters_json) as Record<string, unknown> },
      });
    }
  }
  const toolSlot = env.toolSlot ?? null;
  // Every tool request waits for headers on one of the invocation's connections, as the model's do.
  const slotted = (fetchFn: typeof fetch): typeof fetch => (toolSlot === null ? fetchFn : toSlottedFetch(fetchFn, toolSlot));
  const httpSettings = { ...env.http, fetch: slotted(env.http.fetch) };
  const webhookSettings = { ...env.webhook, fetch: slotted(env.webhook.fetch) };
  const mcp = mcpServers.length === 0 ? null : createMcpTools(tenant, mcpServers, env.mcp, toolSlot);
  if (mcp !== null) definitions.push(...mcp.definitions);
  const offered = definitions.map((d) => (d.type === "function" ? d.function.name : "")).join(", ");
  const secret = env.webhook.secret;
  let signingKey: Promise<string | null> | null = null;
  const tenantKey = (): Promise<string | null> => (signingKey ??= secret === null || secret === "" ? Promise.resolve(null) : deriveWebhookKey(secret, tenant));

  const run = async (call: ToolCall, context: { swarmId: string; taskId: string }): Promise<SwarmToolResult> => {
    if (!call.arguments.ok) return { ok: false, content: toToolError(`${call.name || "tool call"}: ${call.arguments.error}`) };
    const args = call.arguments.value;
    try {
      if (scratchpad && isScratchpadTool(call.name)) {
        const request = toScratchpadRequest(call.name, args, context.taskId);
        if (!request.ok) return { ok: false, content: toToolError(request.error) };
        const answer = await env.scratchpad(request.request);
        return answer.ok ? { ok: true, content: JSON.stringify(withoutOk(answer)) } : { ok: false, content: toToolError(`${call.name}: ${answer.error}`) };
      }
      if (http && call.name === "http_fetch") {
        const result = await runHttpFetch(args, { ...httpSettings, policy: { allowlist: httpAllowlist, allowPrivate: env.http.allowPrivate } });
        return result.ok ? result : { ok: false, content: toToolError(result.content) };
      }
      if (mcp?.handles(call.name)) return await mcp.run(call);
      const webhook = webhooks.get(call.name);
      if (webhook !== undefined) {
        const result = await runWebhook(
          { url: webhook.url, toolName: webhook.name, arguments: args, swarmId: context.swarmId, taskId: context.taskId, toolCallId: call.id },
          { ...webhookSettings, secret: await tenantKey() },
        );
        return result.ok ? result : { ok: false, content: toToolError(result.content) };
      }
      return { ok: false, content: toToolError(`there is no tool named "${call.name}" (tools: ${offered || "none"})`) };
    } catch (error) {
      // A scratchpad RPC that failed (the SwarmRoom restarting): the model may try again.
      return { ok: false, content: toToolError(`${call.name} failed: ${toErrorMessage(error)}`) };
    }
  };
  return { definitions, run, close: async () => mcp?.close() };
}

function withoutOk(answer: Extract<ScratchpadResponse, { ok: true }>): Record<string, unknown> {
  const { ok: _ok, op: _op, ...rest } = answer;
  return rest;
}
