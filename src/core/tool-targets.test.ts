import { describe, expect, it } from "vitest";
import { checkToolTargets } from "./tool-targets.ts";

const webhook = (url: string) => ({ name: "lint", description: "Lint", parameters: { type: "object" }, url });

const mcp = (url: string) => ({ name: "code", url, tools: "*" as const, timeout_s: 30 });

describe("checkToolTargets", () => {
  it.each([
    ["a public https webhook", { tools: [webhook("https://ci.example.com/lint")] }, []],
    ["a plain-http webhook", { tools: [webhook("http://ci.example.com/lint")] }, ["tools.0.url"]],
    ["a loopback webhook", { tools: ["scratchpad" as const, webhook("https://127.0.0.1/hook")] }, ["tools.1.url"]],
    ["the metadata address as a webhook", { tools: [webhook("https://169.254.169.254/latest")] }, ["tools.0.url"]],
    ["public allowlist entries", { http_allowlist: ["api.example.com", "*.docs.rs", "cdn.example.net:8443"] }, []],
    [
      "private and loopback allowlist entries",
      { http_allowlist: ["10.0.0.1", "api.example.com", "localhost:8788", "[::1]"] },
      ["http_allowlist.0", "http_allowlist.2", "http_allowlist.3"],
    ],
    ["a wildcard over internal names", { http_allowlist: ["*.internal"] }, ["http_allowlist.0"]],
    ["a public https MCP server", { mcp_servers: [mcp("https://mcp.example.com/mcp")] }, []],
    [
      "plain-http, loopback and metadata MCP servers",
      { mcp_servers: [mcp("http://mcp.example.com/mcp"), mcp("https://127.0.0.1/mcp"), mcp("https://169.254.169.254/mcp")] },
      ["mcp_servers.0.url", "mcp_servers.1.url", "mcp_servers.2.url"],
    ],
  ])("%s", (_label, spec, paths) => {
    expect(checkToolTargets(spec, false).map((p) => p.path)).toEqual(paths);
  });

  it("allows private targets and plain-http webhooks when private targets are allowed (local development)", () => {
    expect(checkToolTargets({ tools: [webhook("http://127.0.0.1:8788/tools/lint")], http_allowlist: ["127.0.0.1:8788", "localhost"] }, true)).toEqual([]);
    expect(checkToolTargets({ mcp_servers: [mcp("http://127.0.0.1:8790/mcp")] }, true)).toEqual([]);
    expect(checkToolTargets({ mcp_servers: [mcp("http://169.254.169.254/mcp")] }, true).map((p) => p.path)).toEqual(["mcp_servers.0.url"]);
  });

  it("refuses link-local and metadata targets at submit even when private targets are allowed", () => {
    const problems = checkToolTargets(
      { tools: [webhook("http://169.254.169.254/hook")], http_allowlist: ["127.0.0.1:8788", "169.254.169.254", "metadata.google.internal", "[fe80::1]"] },
      true,
    );
    expect(problems.map((p) => p.path)).toEqual(["tools.0.url", "http_allowlist.1", "http_allowlist.2", "http_allowlist.3"]);
  });

  it("says why, for the person who wrote the spec", () => {
    const [problem] = checkToolTargets({ http_allowlist: ["10.0.0.1"] }, false);
    expect(problem?.message).toMatch(/10\.0\.0\.1 is a private address.*http_fetch could never reach it/);
  });
});
