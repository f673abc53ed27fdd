import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { getJson, isLoopbackUrl } from "./swarm-client.ts";

describe("which stacks the scripts ask for uncompressed answers", () => {
  it.each([
    ["http://127.0.0.1:8787", true],
    ["http://127.0.0.1:8787/", true],
    ["http://127.1.2.3:80", true],
    ["http://localhost:8787", true],
    ["http://[::1]:8787", true],
    ["https://edgeswarm.example.workers.dev", false],
    ["https://127.0.0.1.example.com", false],
    ["http://10.0.0.1:8787", false],
  ])("%s → %s", (url, loopback) => {
    expect(isLoopbackUrl(url)).toBe(loopback);
  });

  it("a local stack is asked for identity, so its entry Worker does not gzip the JSON on the orchestrator's thread", async () => {
    const seen: (string | undefined)[] = [];
    const server = createServer((request, response) => {
      seen.push(request.headers["accept-encoding"]);
      response.writeHead(200, { "content-type": "application/json" });
      response.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      expect(await getJson(`http://127.0.0.1:${port}`, "token", "/v1/health")).toEqual({ ok: true });
      expect(seen).toEqual(["identity"]);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
