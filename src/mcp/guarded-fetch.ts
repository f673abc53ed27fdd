// The fetch an MCP client gets: every hop, the first request and each redirect target, passes the
// egress guard http_fetch and webhooks use (src/core/ssrf-guard.ts). It never follows a redirect it
// has not checked. Connection slots are the caller's: it passes a fetch that takes them.
import { checkWebhookTarget } from "../core/ssrf-guard.ts";

export interface GuardedFetchSettings {
  fetch: typeof fetch;
  /** Loopback and private ranges allowed (ALLOW_PRIVATE_NETWORK, local development only). */
  allowPrivate: boolean;
  maxRedirects: number;
}

/** A request the guard refused: its message is safe to show (it names the address and the rule). */
export class EgressRefused extends Error {
  override readonly name = "EgressRefused";
}

/**
 * A fetch for one MCP server. Only 307 and 308 are followed (they keep the method and body of a
 * JSON-RPC POST; 301–303 would turn it into a GET), each target checked like the first. Workers'
 * fetch in `redirect: "manual"` mode resolves to the 3xx itself, so nothing unchecked is reached.
 */
export function createGuardedFetch(settings: GuardedFetchSettings): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const body = request.body === null ? null : await request.arrayBuffer();
    const headers = new Headers(request.headers);
    let url = request.url;
    for (let hop = 0; ; hop += 1) {
      const target = checkWebhookTarget(url, settings.allowPrivate);
      if (!target.ok) throw new EgressRefused(`MCP request refused: ${target.reason}`);
      const response = await settings.fetch(target.url.href, {
        method: request.method,
        headers,
        body,
        redirect: "manual",
        signal: request.signal,
      });
      if (response.status < 300 || response.status >= 400 || response.status === 304) return response;
      const location = response.headers.get("location");
      await response.body?.cancel().catch(() => {});
      if ((response.status !== 307 && response.status !== 308) || location === null) {
        throw new EgressRefused(
          `MCP server answered HTTP ${response.status}${location === null ? "" : ` (a redirect to ${location.slice(0, 200)})`}; only 307/308 redirects are followed`,
        );
      }
      if (hop >= settings.maxRedirects) throw new EgressRefused(`MCP server redirected more than ${settings.maxRedirects} times`);
      const next = new URL(location, url);
      // A credential is for the server the spec named: it does not follow a redirect to another origin.
      if (next.origin !== new URL(url).origin) headers.delete("authorization");
      url = next.href;
    }
  };
}
