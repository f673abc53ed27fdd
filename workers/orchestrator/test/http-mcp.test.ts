// HTTP: a spec's MCP servers at submit. Each server's tool list is read once (the mock MCP server of
// the global setup, dev/mock-mcp) and the spec's choice pinned; what cannot be used is a 400 naming
// `mcp_servers.<i>…` before any SwarmRoom exists.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../app.ts";
import { TOKEN_A, validSpec } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";

/** POST /v1/swarms with loopback targets allowed (local development), as `npm start` runs. */
async function submit(spec: Record<string, unknown>, allowPrivate = true): Promise<Response> {
  return createApp().request(
    "/v1/swarms",
    { method: "POST", headers: { authorization: `Bearer ${TOKEN_A}`, "content-type": "application/json" }, body: JSON.stringify(spec) },
    { ...env, ALLOW_PRIVATE_NETWORK: allowPrivate ? "true" : "false" },
  );
}

const listReads = async (key: string): Promise<number> => {
  const stats = (await (await fetch(`${env.MOCK_MCP_URL}/_stats`)).json()) as { listReads: Record<string, number> };
  return stats.listReads[key] ?? 0;
};

describe("POST /v1/swarms with mcp_servers", () => {
  it("reads each server's tool list once and starts the swarm", async () => {
    const key = "/mcp?http=accepted";
    const before = await listReads(key);
    const response = await submit(validSpec({ mcp_servers: [{ name: "code", url: `${env.MOCK_MCP_URL}${key}`, tools: ["search_code"] }] }));
    expect(response.status).toBe(202);
    expect(await listReads(key)).toBe(before + 1);
  });

  it.each([
    [{ name: "code", url: "MOCK/mcp", tools: ["search_code", "deploy"] }, "mcp_servers.0.tools.1", /the server has no tool "deploy"/],
    [{ name: "code", url: "MOCK/dead/mcp" }, "mcp_servers.0", /could not be read/],
    [{ name: "Code", url: "MOCK/mcp" }, "mcp_servers.0.name", /lowercase/],
    [{ name: "code", url: "MOCK/mcp", timeout_s: 500 }, "mcp_servers.0.timeout_s", /120/],
  ])("refuses %j with a 400 at %s", async (server, path, message) => {
    const response = await submit(validSpec({ mcp_servers: [{ ...server, url: server.url.replace("MOCK", env.MOCK_MCP_URL) }] }));
    expect(response.status).toBe(400);
    const body = await readErrorBody(response);
    expect(body.code).toBe("invalid_spec");
    expect(body.details.find((d) => d.path === path)?.message).toMatch(message);
  });

  it("refuses a loopback server unless private targets are allowed", async () => {
    const response = await submit(validSpec({ mcp_servers: [{ name: "code", url: `${env.MOCK_MCP_URL}/mcp` }] }), false);
    expect(response.status).toBe(400);
    expect((await readErrorBody(response)).details[0]?.path).toBe("mcp_servers.0.url");
  });
});
