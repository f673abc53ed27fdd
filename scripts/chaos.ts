// `npm run chaos`: one swarm against a hostile mock upstream on the local stack, then the proof
// that nothing was lost or paid twice: every task terminal, ledger rows = upstream calls, ledger
// tokens = upstream tokens, and how retries compare with the 429s the upstream sent. Figures only.
//   Its options: `program` below (`npm run chaos -- --help`).
import { rm } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import type { MockModelOptions } from "../dev/mock-model/server.ts";
import { readIntOption } from "./lib/int-option.ts";
import { ROOT, STACK_ENVIRONMENT, generateToken, queryLocalD1, startStack } from "./lib/local-stack.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { getAllResults, submitSwarm, waitForSwarm } from "./lib/swarm-client.ts";

const program = newProgram("npm run chaos --")
  .description(
    `One swarm against a hostile mock upstream on the local stack, then the proof that nothing was lost or paid twice (docs/operations.md). Environment: ${STACK_ENVIRONMENT}.`,
  )
  .option("--profile <profile>", "mixed (20% 429, 5% 5xx, 2% hangs, 1% malformed, 1% truncated) or clean (no random faults)", "mixed")
  .option("--tasks <n>", "tasks (1-10,000)", "500")
  .option("--concurrency <w>", "the window W (1-1,500)", "64")
  .option("--latency <ms>", "the mock model's latency (0-60,000)", "100")
  .option("--timeout-s <s>", "one call's deadline, limits.timeout_s (1-600)", "3")
  .option("--max-attempts <n>", "attempts per task, limits.max_attempts (1-10)", "8")
  .option("--rpm-per-key <n>", "on top of the profile, the mock answers 429 past N requests/min per key (0 = off)", "0")
  .option("--seed <n>", "the mock's PRNG seed (0-2^31)", "7");
parseOrExit(program);
const values = program.opts<{
  profile: string;
  tasks: string;
  concurrency: string;
  latency: string;
  timeoutS: string;
  maxAttempts: string;
  rpmPerKey: string;
  seed: string;
}>();

const profile = values.profile;
if (profile !== "mixed" && profile !== "clean") {
  console.error(`--profile must be "mixed" or "clean", got "${profile}"`);
  process.exit(2);
}
const tasks = readIntOption("tasks", values.tasks, 1, 10_000);
const concurrency = readIntOption("concurrency", values.concurrency, 1, 1_500);
const latency = readIntOption("latency", values.latency, 0, 60_000);
const timeoutS = readIntOption("timeout-s", values.timeoutS, 1, 600);
const maxAttempts = readIntOption("max-attempts", values.maxAttempts, 1, 10);
const rpm = readIntOption("rpm-per-key", values.rpmPerKey, 0, 1_000_000);
const seed = readIntOption("seed", values.seed, 0, 2 ** 31);

const MIXED_RATES = { "429": 0.2, "500": 0.02, "502": 0.015, "503": 0.015, hang: 0.02, malformed: 0.01, truncated: 0.01 };
const scenario: MockModelOptions = {
  latency,
  seed,
  retry_after_s: 1,
  ...(profile === "mixed" ? { rates: MIXED_RATES } : {}),
  ...(rpm > 0 ? { rpm_per_key: rpm } : {}),
};

const persistTo = path.join(ROOT, ".tmp", "chaos-state");
await rm(persistTo, { recursive: true, force: true });
console.log(
  `chaos: profile=${profile} ${profile === "mixed" ? JSON.stringify(MIXED_RATES) : ""} rpm_per_key=${rpm || "off"} tasks=${tasks} W=${concurrency} latency=${latency} ms timeout=${timeoutS} s max_attempts=${maxAttempts}`,
);
const stack = await startStack({ port: 0, apiToken: generateToken(), mock: scenario, persistTo, log: "capture" });
try {
  const spec = {
    name: `chaos ${profile}${rpm > 0 ? ` rpm=${rpm}` : ""}`,
    model: "mock-1",
    tasks: Array.from({ length: tasks }, (_, i) => ({ id: `c${String(i + 1).padStart(4, "0")}`, prompt: `chaos task ${i + 1}` })),
    limits: { concurrency, max_output_tokens: 32, timeout_s: timeoutS, max_attempts: maxAttempts },
  };
  const started = Date.now();
  const { id } = await submitSwarm(stack.url, stack.token, spec);
  const status = await waitForSwarm(stack.url, stack.token, id, { timeoutMs: 1_800_000, pollMs: 500 });
  const wallS = (Date.now() - started) / 1000;
  const results = await getAllResults(stack.url, stack.token, id);
  const ResultSchema = z.looseObject({
    state: z.string(),
    attempts: z.number(),
    error: z.object({ class: z.string() }).nullable(),
    usage: z.looseObject({ calls: z.number() }),
  });
  const rows = results.map((r) => ResultSchema.parse(r));

  // The ledger reaches D1 in batched flushes: wait until it holds every call the room recorded.
  const LedgerSchema = z.array(z.object({ n: z.number(), tokens: z.number().nullable(), dup: z.number() }));
  const ledgerQuery = `SELECT COUNT(*) AS n, SUM(total_tokens) AS tokens,
      COUNT(*) - COUNT(DISTINCT task_id || ':' || attempt || ':' || turn) AS dup FROM ledger WHERE swarm_id = '${id}'`;
  let ledger = LedgerSchema.parse(queryLocalD1(persistTo, ledgerQuery))[0];
  for (let i = 0; i < 20 && (ledger?.n ?? 0) < status.usage.calls; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    ledger = LedgerSchema.parse(queryLocalD1(persistTo, ledgerQuery))[0];
  }
  const upstream = stack.mock?.stats();

  const terminal = new Set(["succeeded", "failed", "cancelled", "skipped_budget", "skipped"]);
  const lost = rows.filter((r) => !terminal.has(r.state)).length + (tasks - rows.length);
  const overCalled = rows.filter((r) => r.usage.calls > r.attempts).length;
  const ok = rows.filter((r) => r.state === "succeeded").length;
  const failedByClass = new Map<string, number>();
  for (const r of rows) if (r.state === "failed") failedByClass.set(r.error?.class ?? "?", (failedByClass.get(r.error?.class ?? "?") ?? 0) + 1);
  const retries = rows.reduce((n, r) => n + Math.max(0, r.attempts - 1), 0);
  const seen429 = upstream?.by_status["429"] ?? 0;
  const upstreamCalls = upstream?.calls ?? 0;
  const upstreamTokens = upstream?.total_tokens ?? 0;

  const table: [string, string][] = [
    ["tasks", String(tasks)],
    ["ok", `${ok} (${((100 * ok) / tasks).toFixed(1)}%)`],
    ["failed", failedByClass.size === 0 ? "0" : [...failedByClass].map(([c, n]) => `${n} ${c}`).join(", ")],
    ["swarm state", status.state],
    ["model calls (ledger)", String(ledger?.n ?? "n/a")],
    ["model calls (upstream)", String(upstreamCalls)],
    ["retries (attempts beyond the first)", String(retries)],
    ["429s sent by the upstream", String(seen429)],
    ["faults injected", JSON.stringify(upstream?.faults_injected ?? {})],
    ["upstream statuses", JSON.stringify(upstream?.by_status ?? {})],
    ["final window / max", `${String(status.window ?? "?")} / ${concurrency}`],
    ["retry budget used", JSON.stringify(status.retries ?? null)],
    ["wall", `${wallS.toFixed(1)} s`],
  ];
  const width = Math.max(...table.map(([k]) => k.length));
  for (const [k, v] of table) console.log(`${k.padEnd(width)}  ${v}`);
  console.log("");
  console.log(
    [
      `lost = ${lost}`,
      `double-recorded = ${(ledger?.dup ?? 0) + overCalled}`,
      `ledger rows = upstream calls: ${ledger?.n === upstreamCalls ? "yes" : `NO (${ledger?.n} vs ${upstreamCalls})`}`,
      `ledger tokens = upstream tokens: ${ledger?.tokens === upstreamTokens ? `yes (${upstreamTokens})` : `NO (${ledger?.tokens} vs ${upstreamTokens})`}`,
      `retries <= 2 x 429s: ${retries <= 2 * seen429 ? "yes" : "no"} (${retries} vs ${seen429})`,
    ].join("\n"),
  );
} finally {
  await stack.stop();
}
