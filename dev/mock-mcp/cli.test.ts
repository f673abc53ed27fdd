// The CLI entry's command line: --help lists the flags and exits 0 before it serves; an unknown flag
// or a bad value is one line on stderr and exit 2, with no server started and no stack trace.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const serverPath = fileURLToPath(new URL("./server.ts", import.meta.url));
const run = promisify(execFile);

/** The CLI's exit code and output. The timeout only ends a child that went on to serve (a failed test). */
async function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [serverPath, ...args], { encoding: "utf8", timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== "number") throw error;
    return { code: failed.code, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

it("prints its flags for --help and exits 0 without serving", async () => {
  const { code, stdout, stderr } = await runCli(["--help"]);
  expect(stdout).toMatch(/^Usage: node dev\/mock-mcp\/server\.ts/);
  expect(stdout).toContain("--latency MS");
  expect(stdout).not.toContain("listening");
  expect(stderr).toBe("");
  expect(code).toBe(0);
});

describe.concurrent("refuses a bad command line with one line and exit 2", () => {
  it.each([
    [["--no-such-option"], "mock-mcp: Unknown option '--no-such-option'"],
    [["--port", "http"], 'mock-mcp: --port expects a port 0-65535, got "http"'],
    [["--latency", "soon"], 'mock-mcp: --latency expects milliseconds >= 0, got "soon"'],
  ])("%j", async (args, message) => {
    const { code, stdout, stderr } = await runCli(args);
    expect(stderr.trim()).toBe(message);
    expect(stdout).toBe("");
    expect(code).toBe(2);
  });
});
