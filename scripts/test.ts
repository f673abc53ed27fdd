// `npm test`: type-checks everything (incl. that the committed binding types match the wrangler
// configs), then runs every vitest project and ends with one line `N passed, N failed`.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { buildDashboard } from "./lib/local-stack.ts";
import { WRANGLER_OFFLINE_ENV } from "./lib/wrangler-env.ts";

const root = path.resolve(import.meta.dirname, "..");
const env = { ...process.env, ...WRANGLER_OFFLINE_ENV };
const npm = process.env.npm_execpath;
const vitestArgs = process.argv.slice(2);

// The orchestrator's static assets (the dashboard) must exist before wrangler reads wrangler.toml.
buildDashboard();

const check = npm
  ? spawnSync(process.execPath, [npm, "run", "check"], { cwd: root, env, stdio: "inherit" })
  : spawnSync("npm", ["run", "check"], { cwd: root, env, stdio: "inherit" });
if (check.status !== 0) {
  console.log("0 passed, 1 failed (type check)");
  process.exit(1);
}

const report = path.join(root, ".tmp", "vitest-report.json");
mkdirSync(path.dirname(report), { recursive: true });
rmSync(report, { force: true });
const run = spawnSync(
  process.execPath,
  [path.join(root, "node_modules/vitest/vitest.mjs"), "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...vitestArgs],
  { cwd: root, env, stdio: "inherit" },
);

const ReportSchema = z.looseObject({ numPassedTests: z.number(), numFailedTests: z.number(), numPendingTests: z.number().optional() });
let line = `0 passed, 1 failed (vitest exited ${run.status ?? run.signal} without a report)`;
try {
  const counts = ReportSchema.parse(JSON.parse(readFileSync(report, "utf8")));
  line = `${counts.numPassedTests} passed, ${counts.numFailedTests} failed`;
  if (counts.numPendingTests) line += `, ${counts.numPendingTests} skipped`;
} catch {
  // no report: vitest failed before running tests; the line above says so
}
console.log(line);
process.exit(run.status === 0 ? 0 : 1);
