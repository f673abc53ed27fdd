// The canary's figures as text: calls in flight over time (a sparkline and a row a second), the
// ramp, the timing, and the capacity model's figures next to the measured ones. Pure: figures in,
// lines out.
import type { CanaryFigures, SecondRow } from "./canary-figures.ts";
import { formatUsd } from "./format-usd.ts";

const BARS = "▁▂▃▄▅▆▇█";
/** A sparkline or table longer than this is folded: each column or row then stands for several seconds. */
const MAX_SPARK_COLUMNS = 100;
const MAX_TABLE_ROWS = 30;

/** One character a value, scaled to the peak; `·` for nothing in flight. */
export function toSparkline(values: readonly number[], maxColumns = MAX_SPARK_COLUMNS): string {
  const per = Math.max(1, Math.ceil(values.length / maxColumns));
  const folded: number[] = [];
  for (let i = 0; i < values.length; i += per) folded.push(Math.max(...values.slice(i, i + per)));
  const peak = Math.max(0, ...folded);
  return folded.map((v) => (v <= 0 || peak === 0 ? "·" : (BARS[Math.min(BARS.length - 1, Math.floor((v / peak) * (BARS.length - 1) + 0.5))] ?? "█"))).join("");
}

const fixed = (n: number | null, digits = 0, unit = ""): string =>
  n === null ? "—" : `${n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })}${unit}`;
const seconds = (ms: number | null): string => (ms === null ? "not reached" : ms < 10_000 ? `${ms} ms` : `${(ms / 1_000).toFixed(1)} s`);
const usd = formatUsd;
const peakMean = (pm: { peak: number; mean: number } | null, digits = 1): string =>
  pm === null ? "—" : `peak ${fixed(pm.peak, 0)}, mean ${fixed(pm.mean, digits)}`;

function toSecondsTable(rows: readonly SecondRow[]): string[] {
  const step = Math.max(1, Math.ceil(rows.length / MAX_TABLE_ROWS));
  const shown = rows.filter((_, i) => i % step === 0 || i === rows.length - 1);
  const header = ["s", "in flight", "lanes", "done", "SwarmRoom req/s"];
  const body = shown.map((r) => [String(r.atS), String(r.inFlight), r.lanes === null ? "—" : String(r.lanes), String(r.done), fixed(r.roomRequestsPerS, 0)]);
  return toColumns([header, ...body]).map((line) => `  ${line}`);
}

/** Left-aligned columns, two spaces apart. */
export function toColumns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, [...cell].length);
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell + " ".repeat((widths[i] ?? 0) - [...cell].length)))
      .join("  ")
      .trimEnd(),
  );
}

/** The capacity model's figures and the measured ones, a row each. */
export function toComparisonRows(f: CanaryFigures): string[][] {
  const c = f.model?.capacity ?? null;
  const m = (value: number | undefined, digits = 0): string => fixed(value ?? null, digits);
  const cost = f.costPer1kTasks;
  return [
    ["figure", "capacity model", "measured"],
    ["executors (lanes)", m(c?.executors), peakMean(f.lanes)],
    ["calls in flight", m(c?.inFlight), peakMean(f.inFlight)],
    ["tasks a second", m(c?.tasksPerS, 1), fixed(f.tasksPerS, 1)],
    ["SwarmRoom requests a second", `${m(c?.roomPullsPerS, 1)} (pulls)`, `${peakMean(f.roomRequestsPerS)} (all requests)`],
    [
      "DO requests / 1,000 tasks",
      m(c?.doRequestsPer1kTasks),
      f.per1kTasks === null ? "—" : `${fixed(f.per1kTasks.doRequests)} (the canary's ${f.per1kTasks.statusReadsLeftOut} status reads left out)`,
    ],
    ["queue messages / 1,000 tasks", m(c?.queueMessagesPer1kTasks, 1), fixed(f.per1kTasks?.queueMessages ?? null, 1)],
    ["DO duration GB-s / 1,000 tasks", m(c?.executorGbSecondsPer1kTasks, 2), "not in the API (the model's, below)"],
    [
      "rows written / 1,000 tasks",
      c === null
        ? "—"
        : `SwarmRoom ${fixed(c.rowsWrittenPer1kTasks.room)}, D1 ${fixed(c.rowsWrittenPer1kTasks.d1)}, executors ${fixed(c.rowsWrittenPer1kTasks.executors)}`,
      f.per1kTasks === null ? "—" : `SwarmRoom ${fixed(f.per1kTasks.doRowsWritten)}, D1 ${fixed(f.per1kTasks.d1RowsWritten)} (the executors' not in the API)`,
    ],
    [
      "platform USD / 1,000 tasks",
      usd(c?.usdPer1kTasks ?? null),
      cost === null
        ? "—"
        : `${usd(cost.totalUsd)} = requests ${usd(cost.doRequestsUsd)} + rows ${usd(cost.rowsUsd)} + queue ${usd(cost.queueUsd)} + duration ${usd(cost.durationUsdModel)} (model)`,
    ],
  ];
}

export function formatCanaryReport(f: CanaryFigures, reads: { pollMs: number; rampPollMs: number }): string[] {
  const lines: string[] = [];
  lines.push("", `calls in flight, one column a second (peak ${f.inFlight.peak} of W ${f.window}):`, `  ${toSparkline(f.seconds.map((r) => r.inFlight))}`);
  lines.push(...toSecondsTable(f.seconds));
  const r = f.ramp;
  lines.push(
    "",
    `ramp (from submit; status read every ${reads.rampPollMs} ms until 90% of W, then every ${reads.pollMs} ms): first call in flight ${seconds(r.firstInFlightMs)}, ` +
      `50% of W (${Math.ceil(f.window / 2)}) ${seconds(r.halfWindowMs)}, 90% of W (${Math.ceil(f.window * 0.9)}) ${seconds(r.ninetyWindowMs)}; ` +
      `${fixed(r.callsPerS, 0)} calls a second to there`,
  );
  lines.push(
    `time to headers ${fixed(f.timing.ttfbMs, 0, " ms")}, latency ${fixed(f.timing.latencyMs, 0, " ms")} (the lanes' means); ` +
      `status p50 ${fixed(f.timing.p50Ms, 0, " ms")}, p95 ${fixed(f.timing.p95Ms, 0, " ms")}`,
  );
  const input = f.model?.input;
  lines.push(
    "",
    input === undefined
      ? "capacity model: no call was timed, nothing to compare"
      : `capacity model for W ${input.window}, time to headers ${input.ttfbMs} ms, latency ${input.latencyMs} ms, AGENT_CONCURRENCY ${input.concurrency}, ${input.tasks} tasks:`,
  );
  lines.push(...toColumns(toComparisonRows(f)).map((line) => `  ${line}`));
  return lines;
}
