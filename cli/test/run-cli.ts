// Test helper: runs the edgeswarm CLI as a CI job would (no TTY, NO_COLOR, the API and token from the
// environment) and collects its output and exit code.
import { spawn } from "node:child_process";
import path from "node:path";

export const CLI = path.join(import.meta.dirname, "..", "edgeswarm.ts");

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: { EDGESWARM_URL: string; EDGESWARM_API_TOKEN: string } & Record<string, string | undefined>): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH, NO_COLOR: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
