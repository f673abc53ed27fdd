// Every npm script that parses its command line with commander (lib/parse-options.ts) run as a child
// process: --help prints the help and exits 0; an unknown option, a missing value or a bad value is
// one error and the help on stderr, exit 2, never a stack trace. Each child exits while parsing, before
// it starts a stack or writes a file, so the whole table takes seconds.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const run = promisify(execFile);

const CHILD_KILL_MS = 60_000;

/** The script's exit code and output; `process.execPath` is the project's Node (24, devDependency `node`), which runs .ts. */
async function runScript(script: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(ROOT, "scripts", script), ...args], {
      cwd: ROOT,
      encoding: "utf8",
      // Not a time limit of the test: a script that got past its parsing would start a stack, and
      // must not outlive the test on a shared machine.
      timeout: CHILD_KILL_MS,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== "number") throw error;
    return { code: failed.code, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

/** A frame of a Node stack trace ("    at main (file:///…/start.ts:17:20)"), not a wrapped help line that starts with "at". */
const STACK_LINE = /^ {4}at .*:\d+:\d+\)?$/m;

// Each script, and one option given a bad value that the script refuses before it starts anything:
// [script, the bad arguments, what stderr must say].
const SCRIPTS: [string, string[], RegExp][] = [
  ["start.ts", ["--tasks", "0"], /--tasks must be an integer 1-10000, got "0"/],
  ["swarm.ts", ["examples/research.json", "--timeout-s", "soon"], /--timeout-s must be an integer 1-86400, got "soon"/],
  ["faults.ts", ["--case", "flood"], /--case must be one of hostile, kill, kill-tools, kill-cancel, planner; got "flood"/],
  ["soak.ts", ["--minutes", "241"], /--minutes must be an integer 1-240, got "241"/],
  ["chaos.ts", ["--profile", "calm"], /--profile must be "mixed" or "clean", got "calm"/],
  ["economics.ts", ["--budget-usd", "-1"], /--budget-usd must be a positive number, got "-1"/],
  ["otel-dev.ts", ["--port", "70000"], /--port must be an integer 0-65535, got "70000"/],
  ["bench-batch.ts", ["--upload-mb", "200"], /--upload-mb must be an integer 0-190, got "200"/],
  ["bench-dashboard.ts", ["--loads", "many"], /--loads must be an integer 1-100, got "many"/],
  [
    "bench-model-call.ts",
    ["--latency", "lognormal:300:100"],
    /^--latency: lognormal needs 0 < median ≤ p95 \(want MS, uniform:MIN:MAX, normal:MEAN:SD or lognormal:MEDIAN:P95\)$/m,
  ],
  ["bench-room.ts", ["--tasks", "1000,x"], /--tasks must be an integer 1-10000, got "x"/],
  // With its default --ttfb both, bench.ts runs itself twice: it checks every option before the first.
  ["bench.ts", ["--tasks", "0"], /--tasks must be an integer 1-10000, got "0"/],
  ["bench-mcp.ts", ["--era", "ancient"], /--era must be modern or legacy, got "ancient"/],
  ["bench-trace-logs.ts", [], /error: missing required argument 'LOG'/],
  ["bench-trace-path.ts", ["--tasks", "10"], /--tasks must be an integer 100-100000, got "10"/],
  ["types.ts", ["workers/agent"], /error: too many arguments/],
  ["deploy.ts", ["--smoke-model"], /error: option '--smoke-model <model>' argument missing/],
];

describe.concurrent.each(SCRIPTS)("scripts/%s", { timeout: CHILD_KILL_MS + 5_000 }, (script, badValue, badValueError) => {
  it("prints its help for --help and exits 0", async () => {
    const { code, stdout, stderr } = await runScript(script, ["--help"]);
    expect(stderr).toBe("");
    expect(stdout).toMatch(/^Usage: npm (start|run [\w:-]+) -- /);
    expect(stdout).toContain("Options:");
    expect(code).toBe(0);
  });

  it("names an unknown option, prints its help and exits 2", async () => {
    const { code, stdout, stderr } = await runScript(script, ["--no-such-option"]);
    expect(stderr).toContain("error: unknown option '--no-such-option'");
    expect(stderr).toContain("Usage:");
    expect(stderr).not.toMatch(STACK_LINE);
    expect(stdout).toBe("");
    expect(code).toBe(2);
  });

  it("refuses a bad value before it starts anything, and exits 2", async () => {
    const { code, stdout, stderr } = await runScript(script, badValue);
    expect(stderr).toMatch(badValueError);
    expect(stderr).not.toMatch(STACK_LINE);
    expect(stdout).toBe("");
    expect(code).toBe(2);
  });
});
