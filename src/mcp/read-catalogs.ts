// Submit-time: each of a spec's MCP servers is read once (its era and its tool list) and the spec's
// choice of tools is pinned (src/core/mcp-catalog.ts). A server that cannot be read, a tool it
// lacks or a tool name used twice is a detail naming `mcp_servers.<i>…`, for a 400.
import type { ErrorDetail } from "../core/errors.ts";
import { findToolNameCollisions, pinMcpCatalog, type PinnedMcpServer } from "../core/mcp-catalog.ts";
import { err, ok, type Result } from "../core/result.ts";
import type { McpServerSpec } from "../core/spec-schema.ts";
import { checkWebhookTarget } from "../core/ssrf-guard.ts";
import { createGuardedFetch } from "./guarded-fetch.ts";
import { describeMcpFailure, openMcpSession } from "./mcp-session.ts";

/** Redirects an MCP request follows (307/308 only, each target checked), as http_fetch's. */
export const MCP_MAX_REDIRECTS = 5;

export interface CatalogReaderSettings {
  fetch: typeof fetch;
  allowPrivate: boolean;
  maxRedirects: number;
}

/** Reads and pins every server's catalog; `webhookNames` are the spec's webhook tools (names must not collide). */
export type ReadMcpCatalogs = (servers: readonly McpServerSpec[], webhookNames: readonly string[]) => Promise<Result<PinnedMcpServer[], ErrorDetail[]>>;

export function createCatalogReader(settings: CatalogReaderSettings): ReadMcpCatalogs {
  const guarded = createGuardedFetch({ fetch: settings.fetch, allowPrivate: settings.allowPrivate, maxRedirects: settings.maxRedirects });
  return async (servers, webhookNames) => {
    const read = await Promise.all(servers.map((server, i) => readOne(server, i)));
    const problems = read.flatMap((r) => (r.ok ? [] : r.error));
    if (problems.length > 0) return err(problems);
    const pinned = read.flatMap((r) => (r.ok ? [r.value] : []));
    const collisions = findToolNameCollisions(pinned, webhookNames);
    return collisions.length > 0 ? err(collisions) : ok(pinned);
  };

  async function readOne(server: McpServerSpec, index: number): Promise<Result<PinnedMcpServer, ErrorDetail[]>> {
    const target = checkWebhookTarget(server.url, settings.allowPrivate);
    if (!target.ok) return err([{ path: `mcp_servers.${index}.url`, message: target.reason }]);
    const timeoutMs = server.timeout_s * 1_000;
    let listed: Awaited<ReturnType<Awaited<ReturnType<typeof openMcpSession>>["listTools"]>>;
    let era: PinnedMcpServer["era"];
    try {
      const session = await openMcpSession({ url: server.url, fetch: guarded, bearer: null, timeoutMs });
      try {
        listed = await session.listTools(timeoutMs);
        era = session.era;
      } finally {
        await session.close();
      }
    } catch (error) {
      return err([
        { path: `mcp_servers.${index}`, message: `the MCP server at ${target.url.origin} could not be read: ${describeMcpFailure(error, timeoutMs)}` },
      ]);
    }
    return pinMcpCatalog(server, index, listed, era);
  }
}
