// `npm test`: sets up the browser suite's chromium (or says in one line what to install), type-checks
// everything (incl. that the committed binding types match the wrangler configs), then runs every
// vitest project and ends with one line `N passed, N failed`.
import { spawnSync } from "node:child_process";
import { accessSync, constants, mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import {
  BROWSER_TESTS_GLOB,
  type ChromiumHost,
  DEBIAN_CHROMIUM_PATH,
  planChromiumSetup,
  SKIP_BROWSER_ENV,
  selectsBrowserSuite,
  toInstallFailedLine,
} from "./lib/chromium-setup.ts";
import { buildDashboard } from "./lib/local-stack.ts";
import { summarizeVitestRun, toSummaryLine, type VitestReport, VitestReportSchema } from "./lib/test-summary.ts";
import { WRANGLER_OFFLINE_ENV } from "./lib/wrangler-env.ts";

const root = path.resolve(import.meta.dirname, "..");
const env = { ...process.env, ...WRANGLER_OFFLINE_ENV };
const npm = process.env.npm_execpath;
const vitestArgs = process.argv.slice(2);
const extraNotes: string[] = [];

// Before anything long: a missing chromium should cost seconds, not a six-minute run.
if (["1", "true"].includes(process.env[SKIP_BROWSER_ENV] ?? "")) {
  vitestArgs.push("--exclude", BROWSER_TESTS_GLOB);
  extraNotes.push(`browser suite not run: ${SKIP_BROWSER_ENV}=${process.env[SKIP_BROWSER_ENV]}`);
} else if (selectsBrowserSuite(vitestArgs)) {
  setUpChromium();
}

// The orchestrator's static assets (the dashboard) must exist before wrangler reads wrangler.toml.
buildDashboard();

const check = npm
  ? spawnSync(process.execPath, [npm, "run", "check"], { cwd: root, env, stdio: "inherit" })
  : spawnSync("npm", ["run", "check"], { cwd: root, env, stdio: "inherit" });
if (check.status !== 0) {
  console.log(toSummaryLine({ passed: 0, failed: 1, skipped: 0, notes: ["npm run check (types, format, lint) failed: see its output above", ...extraNotes] }));
  process.exit(1);
}

const reportPath = path.join(root, ".tmp", "vitest-report.json");
mkdirSync(path.dirname(reportPath), { recursive: true });
rmSync(reportPath, { force: true });
const run = spawnSync(
  process.execPath,
  [path.join(root, "node_modules/vitest/vitest.mjs"), "run", "--reporter=default", "--reporter=json", `--outputFile.json=${reportPath}`, ...vitestArgs],
  { cwd: root, env, stdio: "inherit" },
);

const summary = summarizeVitestRun({ report: readReport(reportPath), exitCode: run.status, signal: run.signal, root });
summary.notes.push(...extraNotes);
console.log(toSummaryLine(summary));
process.exit(summary.failed > 0 ? 1 : 0);

function setUpChromium(): void {
  // test/browser/chromium.ts launches CHROMIUM_PATH when set: a path of the user's own is never installed over.
  const chromiumPath = process.env.CHROMIUM_PATH ?? DEBIAN_CHROMIUM_PATH;
  const chromiumPathOverride = chromiumPath === DEBIAN_CHROMIUM_PATH ? null : chromiumPath;
  const isRoot = process.getuid?.() === 0;
  const host: ChromiumHost = {
    chromiumPathOverride,
    exists: isExecutable(chromiumPath),
    isRoot,
    passwordlessSudo: !isRoot && succeeds("sudo", ["-n", "true"]),
    hasAptGet: succeeds("apt-get", ["--version"]),
  };
  const plan = planChromiumSetup(host);
  if (plan.kind === "ready") return;
  if (plan.kind === "missing") {
    console.error(plan.line);
    process.exit(1);
  }
  console.log(`npm test: installing Debian's chromium for the browser suite (${plan.commands.map((argv) => argv.join(" ")).join(", then ")})`);
  for (const [command, ...args] of plan.commands) {
    const result = spawnSync(command as string, args, { stdio: "inherit" });
    if (result.status !== 0) {
      console.error(
        toInstallFailedLine([command as string, ...args], result.error ? `failed: ${result.error.message}` : `exited ${result.status ?? result.signal}`),
      );
      process.exit(1);
    }
  }
  if (!isExecutable(DEBIAN_CHROMIUM_PATH)) {
    console.error(toInstallFailedLine(plan.commands.at(-1) ?? [], `left no ${DEBIAN_CHROMIUM_PATH}`));
    process.exit(1);
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function succeeds(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: "ignore" }).status === 0;
}

function readReport(file: string): VitestReport | null {
  try {
    return VitestReportSchema.parse(JSON.parse(readFileSync(file, "utf8")));
  } catch {
    return null; // vitest died before writing it: the summary says so
  }
}
