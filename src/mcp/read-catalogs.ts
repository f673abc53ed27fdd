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
import type { SealedSecret } from "../core/tenant-secrets.ts";

/** Redirects an MCP request follows (307/308 only, each target checked), as http_fetch's. */
export const MCP_MAX_REDIRECTS = 5;

export interface CatalogReaderSettings {
  fetch: typeof fetch;
  allowPrivate: boolean;
  maxRedirects: number;
}

/** A spec's `credential`, found in the tenant's secrets: its ciphertext (pinned) and its value (for this read only). */
export interface ResolvedCredential {
  sealed: SealedSecret;
  bearer: string;
}

/**
 * Reads and pins every server's catalog; `webhookNames` are the spec's webhook tools (names must
 * not collide); `credential` finds a secret of the swarm's tenant by name (null: it has none).
 */
export type ReadMcpCatalogs = (
  servers: readonly McpServerSpec[],
  webhookNames: readonly string[],
  credential: (name: string) => Promise<ResolvedCredential | null>,
) => Promise<Result<PinnedMcpServer[], ErrorDetail[]>>;

export function createCatalogReader(settings: CatalogReaderSettings): ReadMcpCatalogs {
  const guarded = createGuardedFetch({ fetch: settings.fetch, allowPrivate: settings.allowPrivate, maxRedirects: settings.maxRedirects });
  return async (servers, webhookNames, credential) => {
    const read = await Promise.all(servers.map((server, i) => readOne(server, i, credential)));
    const problems = read.flatMap((r) => (r.ok ? [] : r.error));
    if (problems.length > 0) return err(problems);
    const pinned = read.flatMap((r) => (r.ok ? [r.value] : []));
    const collisions = findToolNameCollisions(pinned, webhookNames);
    return collisions.length > 0 ? err(collisions) : ok(pinned);
  };

  async function readOne(
    server: McpServerSpec,
    index: number,
    credential: (name: string) => Promise<ResolvedCredential | null>,
  ): Promise<Result<PinnedMcpServer, ErrorDetail[]>> {
    const target = checkWebhookTarget(server.url, settings.allowPrivate);
    if (!target.ok) return err([{ path: `mcp_servers.${index}.url`, message: target.reason }]);
    const secret = server.credential === undefined ? null : await credential(server.credential);
    if (server.credential !== undefined && secret === null) {
      return err([
        {
          path: `mcp_servers.${index}.credential`,
          message: `this tenant has no secret "${server.credential}" (PUT /v1/secrets/${server.credential} stores one)`,
        },
      ]);
    }
    const timeoutMs = server.timeout_s * 1_000;
    let listed: Awaited<ReturnType<Awaited<ReturnType<typeof openMcpSession>>["listTools"]>>;
    let era: PinnedMcpServer["era"];
    try {
      const session = await openMcpSession({ url: server.url, fetch: guarded, bearer: secret?.bearer ?? null, timeoutMs });
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
    const pinned = await pinMcpCatalog(server, index, listed, era);
    if (!pinned.ok || server.credential === undefined || secret === null) return pinned;
    return ok({ ...pinned.value, credential: { name: server.credential, ...secret.sealed } });
  }
}
