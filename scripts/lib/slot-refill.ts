// How long a runner leaves the upstream's freed slots empty, round by round, read from the spans
// of its requests as the mock saw them. `npm run bench -- --ramp` prints it for both runners: with
// even calls a window of W runs its tasks in rounds of W, and what sets the wall past the calls'
// own time is the wait between a call's end and the next call in its place, and how far apart the
// last round's calls start. Pure: spans in, figures and text out.
import { percentile } from "../../src/core/percentile.ts";
import type { RequestSpan } from "../../dev/mock-model/server.ts";

/** The refill of one round: the starts from the (round − 1)·W-th on, each paired with a freed slot. */
export interface RoundRefill {
  /** 2 for the W starts after the first W, and so on. */
  round: number;
  /** Starts paired with a slot freed before them. */
  n: number;
  meanMs: number;
  p90Ms: number;
}

export interface SlotRefill {
  window: number;
  /** From the first request to the W-th (the ramp). */
  rampMs: number;
  rounds: RoundRefill[];
  /** The refills' sum over W: the wall they cost a full window. */
  lostMs: number;
  /** From the first to the last of the last W starts, and of the last W ends. */
  lastStartsMs: number;
  lastEndsMs: number;
}

/**
 * Each start after the first `window` is paired with the slot that freed longest before it and is
 * still empty (the ends in order, first in first out), and its refill is the time between them.
 * A start no freed slot precedes (a runner over its window, a hedge's backup) is left out.
 * Null with fewer than two windows of spans.
 */
export function slotRefill(spans: readonly RequestSpan[], window: number): SlotRefill | null {
  const w = Math.floor(window);
  if (w < 1 || spans.length < 2 * w) return null;
  const starts = spans.map((span) => span.start).sort((a, b) => a - b);
  const ends = spans.map((span) => span.end).sort((a, b) => a - b);
  const byRound = new Map<number, number[]>();
  let freed = 0;
  let refilled = 0;
  let lost = 0;
  for (const [index, start] of starts.entries()) {
    if (index < w) continue;
    while (freed < ends.length && (ends[freed] ?? Infinity) <= start) freed += 1;
    if (refilled >= freed) continue;
    const waited = start - (ends[refilled] ?? start);
    refilled += 1;
    lost += waited;
    const round = Math.floor(index / w) + 1;
    const list = byRound.get(round) ?? [];
    list.push(waited);
    byRound.set(round, list);
  }
  const rounds = [...byRound].map(([round, waits]) => ({
    round,
    n: waits.length,
    meanMs: waits.reduce((sum, ms) => sum + ms, 0) / waits.length,
    p90Ms: percentile(waits, 90) ?? 0,
  }));
  const first = starts[0] ?? 0;
  return {
    window: w,
    rampMs: (starts[w - 1] ?? first) - first,
    rounds,
    lostMs: lost / w,
    lastStartsMs: (starts.at(-1) ?? 0) - (starts.at(-w) ?? 0),
    lastEndsMs: (ends.at(-1) ?? 0) - (ends.at(-w) ?? 0),
  };
}

/** Rounds shown one by one; past this many, the first and last few with the middle summed up. */
const ROUNDS_SHOWN = 12;

/**
 * One line: `the 100th request 26 ms after the first; freed slots refilled (ms, mean/p90): r2 24/39,
 * r3 10/12, …; 125 ms of a full window in all; the last 100 started over 260 ms, ended over 263 ms`.
 */
export function formatSlotRefill(refill: SlotRefill | null): string {
  if (refill === null) return "n/a (fewer than two windows of requests)";
  const round = (r: RoundRefill): string => `r${r.round} ${r.meanMs.toFixed(0)}/${r.p90Ms.toFixed(0)}`;
  const { rounds } = refill;
  let shown: string;
  if (rounds.length <= ROUNDS_SHOWN) shown = rounds.map(round).join(", ");
  else {
    const middle = rounds.slice(4, -4);
    const n = middle.reduce((sum, r) => sum + r.n, 0);
    const mean = n === 0 ? 0 : middle.reduce((sum, r) => sum + r.meanMs * r.n, 0) / n;
    const summed = `r${middle[0]?.round}–r${middle.at(-1)?.round} ${mean.toFixed(0)} mean`;
    shown = [...rounds.slice(0, 4).map(round), summed, ...rounds.slice(-4).map(round)].join(", ");
  }
  const w = refill.window;
  return (
    `request ${w} ${refill.rampMs} ms after the first; freed slots refilled (ms, mean/p90): ${shown}; ` +
    `${refill.lostMs.toFixed(0)} ms of a full window in all; the last ${w} started over ${refill.lastStartsMs} ms, ended over ${refill.lastEndsMs} ms`
  );
}
