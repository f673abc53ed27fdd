// When each process used its CPU: the samples of `perf script -F comm,pid,tid,time,…` output (taken
// with `-k CLOCK_REALTIME`, so a sample's time is epoch seconds like Date.now()'s) counted per
// process group and per interval from a moment on. `npm run bench -- --workerd-perf` prints the
// swarm's start this way: which workerd was busy, and which waited, between the submit and the
// window's first full round. At 999 Hz a sample is about 1 ms of one thread's CPU. Pure.
import { readPerfSampleHeader } from "./perf-breakdown.ts";

export interface PerfTimelineGroup {
  name: string;
  pids: readonly number[];
}

export interface PerfTimeline {
  /** The start of each interval, ms after `fromMs`. */
  startsMs: number[];
  /** Each group's samples per interval, in the groups' order; a process in no group is left out. */
  rows: { name: string; samples: number[] }[];
}

export function perfTimeline(text: string, options: { fromMs: number; untilMs: number; bucketMs: number; groups: readonly PerfTimelineGroup[] }): PerfTimeline {
  const { fromMs, untilMs, bucketMs, groups } = options;
  if (!(bucketMs > 0) || !(untilMs > fromMs))
    throw new RangeError(`perfTimeline: need bucketMs > 0 and untilMs > fromMs (got ${bucketMs}, ${fromMs}…${untilMs})`);
  const buckets = Math.ceil((untilMs - fromMs) / bucketMs);
  const groupOf = new Map<number, number>();
  for (const [i, group] of groups.entries()) for (const pid of group.pids) groupOf.set(pid, i);
  const rows = groups.map((group) => ({ name: group.name, samples: new Array<number>(buckets).fill(0) }));
  for (const line of text.split("\n")) {
    const header = readPerfSampleHeader(line);
    if (header === null || header.atMs === null) continue;
    const group = groupOf.get(header.pid);
    if (group === undefined) continue;
    const { atMs } = header;
    if (atMs < fromMs || atMs >= untilMs) continue;
    const row = rows[group];
    const bucket = Math.floor((atMs - fromMs) / bucketMs);
    if (row !== undefined) row.samples[bucket] = (row.samples[bucket] ?? 0) + 1;
  }
  return { startsMs: Array.from({ length: buckets }, (_, i) => i * bucketMs), rows };
}

/** The timeline as aligned lines: a header of interval starts, then a row per group. */
export function formatPerfTimeline(timeline: PerfTimeline): string[] {
  const nameWidth = Math.max(0, ...timeline.rows.map((row) => row.name.length));
  const cell = (value: number | string) => String(value).padStart(4);
  return [
    `  ${"".padEnd(nameWidth)} ${timeline.startsMs.map(cell).join("")}`,
    ...timeline.rows.map((row) => `  ${row.name.padEnd(nameWidth)} ${row.samples.map(cell).join("")}`),
  ];
}
