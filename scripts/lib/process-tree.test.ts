import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { listeningPortsOfDescendants, usageOfDescendants } from "./process-tree.ts";

// These read Linux /proc about this very process (its name is the one /proc/self/comm gives).
const hasProc = (() => {
  try {
    readFileSync("/proc/self/stat");
    return true;
  } catch {
    return false;
  }
})();
const selfName = hasProc ? readFileSync("/proc/self/comm", "utf8").trim() : "";

describe.runIf(hasProc)("process tree (/proc)", () => {
  let server: Server | null = null;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server === null ? resolve() : server.close(() => resolve())));
    server = null;
  });

  it("finds a port this process listens on, and not one it has closed", async () => {
    server = createServer();
    const port = await new Promise<number>((resolve) => {
      server?.listen(0, "127.0.0.1", () => {
        const address = server?.address();
        resolve(typeof address === "object" && address !== null ? address.port : -1);
      });
    });
    expect(listeningPortsOfDescendants([process.pid], selfName)).toContain(port);
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = null;
    expect(listeningPortsOfDescendants([process.pid], selfName)).not.toContain(port);
  });

  it("finds nothing for a name no process below has", () => {
    expect(listeningPortsOfDescendants([process.pid], "no-such-process-name")).toEqual([]);
    expect(usageOfDescendants([process.pid], "no-such-process-name")).toEqual([]);
  });

  it("reads this process's CPU time and memory", () => {
    const [self] = usageOfDescendants([process.pid], selfName);
    expect(self?.pid).toBe(process.pid);
    expect(self?.cpuMs).toBeGreaterThan(0);
    expect(self?.rssMb).toBeGreaterThan(0);
  });
});
