// `npm run sim:hedging`: where a swarm's backups go, simulated over many seeds with the room's own
// policy (src/core/hedge-policy.ts), paced against first come, first served. Virtual time, no stack:
// what it leaves out is in scripts/lib/hedge-simulation.ts. The real figure is `npm run bench --
// --hedge p95` (docs/benchmarks.md).
import { parseLatency } from "../dev/mock-model/latency.ts";
import { toHedgeLimit } from "../src/core/hedge-policy.ts";
import { simulateHedgedSwarm, summarizeWalls, type HedgePolicy } from "./lib/hedge-simulation.ts";
import { readIntOption } from "./lib/int-option.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";

const program = newProgram("npm run sim:hedging --")
  .description(
    "Backups simulated over many swarms (virtual time, the room's hedging policy): the walls with first asks paced, and served first come, first served.",
  )
  .option("--tasks <n>", "tasks a swarm", "1000")
  .option("--concurrency <w>", "the window W", "100")
  .option("--max-extra <share>", "limits.hedge.max_extra: backups as a share of the tasks", "0.05")
  .option("--after-ms <ms>", "the delay (the bench's early-headers swarms computed 1,200–1,300 ms for p95 of lognormal 300/1500)", "1300")
  .option("--latency <spec>", "MS, uniform:MIN:MAX, normal:MEAN:SD or lognormal:MEDIAN:P95", "lognormal:300:1500")
  .option("--seeds <n>", "swarms per policy", "600")
  .option("--first-seed <n>", "the first swarm's seed", "1000");
parseOrExit(program);
const values = program.opts<{ tasks: string; concurrency: string; maxExtra: string; afterMs: string; latency: string; seeds: string; firstSeed: string }>();
const tasks = readIntOption("tasks", values.tasks, 1, 1_000_000);
const window = readIntOption("concurrency", values.concurrency, 1, 100_000);
const afterMs = readIntOption("after-ms", values.afterMs, 1, 600_000);
const seeds = readIntOption("seeds", values.seeds, 1, 100_000);
const firstSeed = readIntOption("first-seed", values.firstSeed, 0, 2 ** 31);
const maxExtra = Number(values.maxExtra);
if (!Number.isFinite(maxExtra) || maxExtra < 0 || maxExtra > 0.5) {
  console.error(`--max-extra must be a number 0-0.5, got "${values.maxExtra}"`);
  process.exit(2);
}
const latency = parseLatency(values.latency);
if (!latency.ok) {
  console.error(`--latency: ${latency.error} (want MS, uniform:MIN:MAX, normal:MEAN:SD or lognormal:MEDIAN:P95)`);
  process.exit(2);
}
const limit = toHedgeLimit({ after: "p95", max_extra: maxExtra }, tasks);

console.log(
  `sim:hedging: tasks=${tasks} W=${window} backups=${limit} delay=${afterMs} ms latency=${values.latency} swarms=${seeds} (seeds ${firstSeed}–${firstSeed + seeds - 1})`,
);
const summaries = new Map<HedgePolicy, ReturnType<typeof summarizeWalls> & { sent: number }>();
for (const policy of ["first_come", "paced"] as const) {
  const walls: number[] = [];
  let sent = 0;
  for (let seed = firstSeed; seed < firstSeed + seeds; seed += 1) {
    const swarm = simulateHedgedSwarm({ tasks, window, limit, afterMs, latency: latency.value, seed }, policy);
    walls.push(swarm.wallMs);
    sent += swarm.sent;
  }
  summaries.set(policy, { ...summarizeWalls(walls), sent: sent / seeds });
}
const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const before = summaries.get("first_come");
for (const [policy, summary] of summaries) {
  const ratio = (key: "meanMs" | "p50Ms" | "p90Ms" | "p99Ms"): string =>
    before === undefined || policy === "first_come" ? "" : ` (${(summary[key] / before[key]).toFixed(2)}x)`;
  console.log(
    `${policy.padEnd(10)} wall mean=${s(summary.meanMs)}${ratio("meanMs")} p50=${s(summary.p50Ms)}${ratio("p50Ms")} p90=${s(summary.p90Ms)}${ratio("p90Ms")} p99=${s(summary.p99Ms)}${ratio("p99Ms")} backups=${summary.sent.toFixed(1)}`,
  );
}
