// An MCP server's tool catalog as a swarm pins it at submit: which listed tools the spec takes, the
// names the model sees (`mcp__<server>__<tool>`), a hash per tool definition (a tool whose
// definition changes mid-swarm is refused, never silently called), and the OpenAI function tools
// the model is offered. No I/O.
import { z } from "zod";
import type { ErrorDetail } from "./errors.ts";
import { err, ok, type Result } from "./result.ts";
import { sha256Hex } from "./sha256.ts";
import { MCP_TOOL_PREFIX, type McpServerSpec } from "./spec-schema.ts";

/** A tool as a server lists it (`tools/list`, `server/discover`): the fields the catalog keeps. */
export interface McpListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
}

/** One tool pinned for the swarm. The schema travels as text (an object of unknowns has no RPC type). */
export const PinnedMcpToolSchema = z.strictObject({
  /** The server's name for it. */
  tool: z.string(),
  /** The model's name for it: `mcp__<server>__<tool>`. */
  exposed: z.string(),
  description: z.string(),
  input_schema_json: z.string(),
  /** Lowercase hex SHA-256 of the definition's canonical JSON (name, description, input schema). */
  hash: z.string(),
});
export type PinnedMcpTool = z.infer<typeof PinnedMcpToolSchema>;

/**
 * The protocol era a server spoke at submit: a 2026-07-28 server with its `server/discover` answer,
 * or a session-based (2025) one. A lane reconnects with it and needs no discovery of its own.
 */
export const McpEraSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("modern"), discover_json: z.string() }),
  z.strictObject({ kind: z.literal("legacy") }),
]);
export type McpEra = z.infer<typeof McpEraSchema>;

/** A server as the swarm pinned it at submit (the SwarmRoom's `swarm.mcp_catalog`, docs/data.md). */
export const PinnedMcpServerSchema = z.strictObject({
  name: z.string(),
  url: z.string(),
  timeout_s: z.number(),
  era: McpEraSchema,
  tools: z.array(PinnedMcpToolSchema),
  /** The spec's credential as the tenant's secret was at submit: its name and ciphertext, never its value. */
  credential: z.strictObject({ name: z.string(), iv: z.string(), ciphertext: z.string() }).optional(),
});
export type PinnedMcpServer = z.infer<typeof PinnedMcpServerSchema>;

/** OpenAI's function-tool shape, without importing the SDK into the core. */
export interface FunctionToolDefinition {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

const EXPOSED_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** `mcp__<server>__<tool>`, or null when that is not a name OpenAI accepts (`[A-Za-z0-9_-]`, ≤ 64). */
export function toExposedToolName(server: string, tool: string): string | null {
  const name = `${MCP_TOOL_PREFIX}${server}__${tool}`;
  return EXPOSED_NAME.test(name) ? name : null;
}

/** JSON with object keys sorted at every depth: the same definition always hashes the same. */
export function toCanonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(toCanonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${toCanonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The hash a tool's definition is pinned and compared by. */
export function hashMcpTool(tool: McpListedTool): Promise<string> {
  return sha256Hex(toCanonicalJson({ name: tool.name, description: tool.description ?? "", inputSchema: tool.inputSchema }));
}

/**
 * The spec's choice of a server's listed tools, pinned: `"*"` takes every listed tool, a list takes
 * those it names. A named tool the server lacks, or a tool whose model-facing name OpenAI would
 * refuse, is a detail naming `mcp_servers.<i>…` (the caller answers 400).
 */
export async function pinMcpCatalog(
  server: McpServerSpec,
  index: number,
  listed: readonly McpListedTool[],
  era: McpEra,
): Promise<Result<PinnedMcpServer, ErrorDetail[]>> {
  const byName = new Map(listed.map((tool) => [tool.name, tool]));
  const problems: ErrorDetail[] = [];
  const chosen: { tool: McpListedTool; path: string }[] = [];
  if (server.tools === "*") {
    for (const tool of byName.values()) chosen.push({ tool, path: `mcp_servers.${index}` });
  } else {
    server.tools.forEach((name, j) => {
      const tool = byName.get(name);
      if (tool === undefined) {
        problems.push({ path: `mcp_servers.${index}.tools.${j}`, message: `the server has no tool "${name}" (it lists: ${toNameList(listed)})` });
      } else {
        chosen.push({ tool, path: `mcp_servers.${index}.tools.${j}` });
      }
    });
  }
  const tools: PinnedMcpTool[] = [];
  for (const { tool, path } of chosen) {
    const exposed = toExposedToolName(server.name, tool.name);
    if (exposed === null) {
      problems.push({
        path,
        message: `tool "${tool.name.slice(0, 100)}" cannot be offered as ${MCP_TOOL_PREFIX}${server.name}__<tool>: the model's tool names are 1-64 letters, digits, '_' or '-'${server.tools === "*" ? ' (list the tools you need instead of "*")' : ""}`,
      });
      continue;
    }
    tools.push({
      tool: tool.name,
      exposed,
      description: tool.description ?? "",
      input_schema_json: JSON.stringify(tool.inputSchema),
      hash: await hashMcpTool(tool),
    });
  }
  if (problems.length > 0) return err(problems);
  return ok({ name: server.name, url: server.url, timeout_s: server.timeout_s, era, tools });
}

/**
 * Model-facing names used twice across the swarm: by two pinned tools, or by a pinned tool and a
 * webhook tool. Each is a detail at the later one.
 */
export function findToolNameCollisions(servers: readonly PinnedMcpServer[], webhookNames: readonly string[]): ErrorDetail[] {
  const seen = new Set(webhookNames);
  const problems: ErrorDetail[] = [];
  servers.forEach((server, i) => {
    for (const tool of server.tools) {
      if (seen.has(tool.exposed)) problems.push({ path: `mcp_servers.${i}.tools`, message: `the tool name ${tool.exposed} is used twice` });
      seen.add(tool.exposed);
    }
  });
  return problems;
}

/** The function tool the model is offered for a pinned MCP tool. */
export function toMcpFunctionTool(server: string, tool: PinnedMcpTool): FunctionToolDefinition {
  const description = tool.description === "" ? `Tool ${tool.tool} of the MCP server ${server}.` : tool.description;
  const parameters = JSON.parse(tool.input_schema_json) as Record<string, unknown>;
  return { type: "function", function: { name: tool.exposed, description, parameters: { type: "object", ...parameters } } };
}

/**
 * Bytes every model call of a sub-task carries for the swarm's webhook and MCP tool definitions:
 * the budget's worst case counts them in each call's prompt (a byte per token at most).
 */
export function toOfferedToolBytes(
  webhooks: readonly { name: string; description: string; parameters: unknown }[],
  servers: readonly PinnedMcpServer[],
): number {
  const definitions: unknown[] = webhooks.map((w) => ({ type: "function", function: { name: w.name, description: w.description, parameters: w.parameters } }));
  for (const server of servers) for (const tool of server.tools) definitions.push(toMcpFunctionTool(server.name, tool));
  return toToolDefinitionBytes(definitions);
}

/** UTF-8 bytes of the tool definitions as a request carries them: what the budget's worst case adds to every call. */
export function toToolDefinitionBytes(definitions: readonly unknown[]): number {
  if (definitions.length === 0) return 0;
  return utf8Length(JSON.stringify(definitions));
}

function utf8Length(text: string): number {
  let bytes = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

function toNameList(listed: readonly McpListedTool[]): string {
  if (listed.length === 0) return "no tools";
  const names = listed.slice(0, 20).map((t) => t.name.slice(0, 64));
  return `${names.join(", ")}${listed.length > 20 ? `, … (${listed.length} in all)` : ""}`;
}
