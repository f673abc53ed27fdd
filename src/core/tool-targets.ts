// Submit-time checks of where a spec's tools would reach: every webhook URL and every
// http_allowlist entry must be a public address (unless private targets are allowed, for local
// development), so a swarm whose tools could only ever fail is refused with a 400 naming the field
// instead of running its agents into tool errors. The same rules hold again at run time. No I/O.
import type { ErrorDetail } from "./errors.ts";
import type { McpServerSpec, ToolSpec } from "./spec-schema.ts";
import { checkFetchTarget, checkWebhookTarget } from "./ssrf-guard.ts";

export function checkToolTargets(
  spec: { tools?: readonly ToolSpec[] | undefined; http_allowlist?: readonly string[] | undefined; mcp_servers?: readonly McpServerSpec[] | undefined },
  allowPrivate: boolean,
): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  (spec.tools ?? []).forEach((tool, i) => {
    if (typeof tool === "string") return;
    const check = checkWebhookTarget(tool.url, allowPrivate);
    if (!check.ok) problems.push({ path: `tools.${i}.url`, message: check.reason });
  });
  // MCP servers are held to the webhook rules: their URL is declared in the spec, https unless private targets are allowed.
  (spec.mcp_servers ?? []).forEach((server, i) => {
    const check = checkWebhookTarget(server.url, allowPrivate);
    if (!check.ok) problems.push({ path: `mcp_servers.${i}.url`, message: check.reason });
  });
  (spec.http_allowlist ?? []).forEach((entry, i) => {
    // A wildcard is judged by a name under it: `*.internal` covers only internal names.
    const host = entry.startsWith("*.") ? `probe.${entry.slice(2)}` : entry;
    const check = checkFetchTarget(`http://${host}/`, { allowlist: [entry], allowPrivate });
    if (!check.ok) problems.push({ path: `http_allowlist.${i}`, message: `${check.reason}: http_fetch could never reach it` });
  });
  return problems;
}
