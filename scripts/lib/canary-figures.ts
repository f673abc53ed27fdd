// The canary's figures from its samples of one swarm's status: the ramp, calls in flight and lanes
// (peak, mean), the SwarmRoom's requests a second, and the platform cost per 1,000 tasks priced with
// the capacity model's PRICES, next to what the capacity model predicts. Pure: samples in, figures out.
import { type Capacity, PRICES, priceOperations, toCapacity } from "../../src/core/capacity-model.ts";

/** One read of the swarm's status. Every read is itself a SwarmRoom request, counted in `doRequests`. */
export interface CanarySample {
  /** ms since the swarm was submitted. */
  atMs: number;
  /** Tasks whose call is under way (`counts.running`). */
  inFlight: number;
  /** Tasks ended (succeeded, failed, cancelled, skipped). */
  done: number;
  /** `dispatch.lanes` / `dispatch.slots`: null from a stack without the dispatch view. */
  lanes: number | null;
  slots: number | null;
  /** `billable.do_requests` so far: null from a stack without billable operations. */
  doRequests: number | null;
  /** `dispatch.ttfb_ms` / `dispatch.latency_ms`: the lanes' recent means, null before any call. */
  ttfbMs: number | null;
  latencyMs: number | null;
}

export interface CanaryBillable {
  queueMessagesSent: number;
  doRequests: number;
  doRowsWritten: number;
  d1RowsWritten: number;
}

export interface CanaryRun {
  tasks: number;
  /** The spec's window (limits.concurrency). */
  window: number;
  /** AGENT_CONCURRENCY of the stack's agent: the capacity model's cap on one lane. */
  agentConcurrency: number;
  samples: readonly CanarySample[];
  /** Status reads the canary made in all (each a SwarmRoom request the swarm would not have had). */
  statusReads: number;
  /** The last status's figures. */
  succeeded: number;
  failed: number;
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
  billable: CanaryBillable | null;
}

export interface SecondRow {
  /** Whole seconds since submit (the row covers the second up to it). */
  atS: number;
  /** The most calls in flight and lanes a sample of this second saw. */
  inFlight: number;
  lanes: number | null;
  done: number;
  /** SwarmRoom requests a second over this row's span, the canary's own reads left out. */
  roomRequestsPerS: number | null;
}

export interface PeakMean {
  peak: number;
  mean: number;
}

export interface CanaryFigures {
  tasks: number;
  /** The window the ramp is measured against: min(W, tasks). */
  window: number;
  succeeded: number;
  failed: number;
  ramp: {
    /** ms from submit to the first sample with a call in flight, half the window, 90% of it. */
    firstInFlightMs: number | null;
    halfWindowMs: number | null;
    ninetyWindowMs: number | null;
    /** Calls in flight a second of ramp: the calls at 90% of the window (or at the peak) over the time from submit to it. */
    callsPerS: number | null;
  };
  /** Time-weighted over the span from the first to the last sample with calls in flight. */
  inFlight: PeakMean;
  lanes: PeakMean | null;
  slotsPeak: number | null;
  roomRequestsPerS: PeakMean | null;
  /** Tasks ended a second, from the first call in flight to the last task's end. */
  tasksPerS: number | null;
  timing: { ttfbMs: number | null; latencyMs: number | null; p50Ms: number | null; p95Ms: number | null };
  /** Per 1,000 tasks; null without billable operations. */
  per1kTasks: {
    doRequests: number;
    /** Left out of doRequests: the canary's status reads. */
    statusReadsLeftOut: number;
    queueMessages: number;
    doRowsWritten: number;
    d1RowsWritten: number;
  } | null;
  /** USD per 1,000 tasks on the platform: measured operations, the model's duration estimate. */
  costPer1kTasks: { doRequestsUsd: number; rowsUsd: number; queueUsd: number; durationUsdModel: number | null; totalUsd: number } | null;
  /** The capacity model for the measured window, ttfb and latency; null before a call was timed. */
  model: { input: { window: number; ttfbMs: number; latencyMs: number; concurrency: number; tasks: number }; capacity: Capacity } | null;
  seconds: SecondRow[];
}

const mean = (values: readonly number[]): number | null => (values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length);
const nonNull = (values: ReadonlyArray<number | null>): number[] => values.filter((v): v is number => v !== null);

/** The first sample with at least `atLeast` calls in flight (at least 1). */
function firstAtLeast(samples: readonly CanarySample[], atLeast: number): CanarySample | null {
  return samples.find((s) => s.inFlight >= Math.max(1, atLeast)) ?? null;
}

/** Ramp: when the first call, half and 90% of the window were in flight, and how fast they came. */
export function toRamp(samples: readonly CanarySample[], window: number): CanaryFigures["ramp"] {
  const first = firstAtLeast(samples, 1);
  const half = firstAtLeast(samples, Math.ceil(window / 2));
  const ninety = firstAtLeast(samples, Math.ceil(window * 0.9));
  let end = ninety;
  if (end === null) {
    const peak = Math.max(0, ...samples.map((s) => s.inFlight));
    end = peak > 0 ? firstAtLeast(samples, peak) : null;
  }
  const callsPerS = end !== null && end.atMs > 0 ? (end.inFlight * 1_000) / end.atMs : null;
  return { firstInFlightMs: first?.atMs ?? null, halfWindowMs: half?.atMs ?? null, ninetyWindowMs: ninety?.atMs ?? null, callsPerS };
}

/**
 * Peak and time-weighted mean of `value` over the active span (first to last sample with calls in
 * flight): each sample's value holds until the next sample. null when no sample has a value.
 */
export function toPeakMean(samples: readonly CanarySample[], value: (s: CanarySample) => number | null): PeakMean | null {
  const values = nonNull(samples.map(value));
  if (values.length === 0) return null;
  const peak = Math.max(...values);
  const firstActive = samples.findIndex((s) => s.inFlight > 0);
  const lastActive = samples.findLastIndex((s) => s.inFlight > 0);
  if (firstActive < 0) return { peak, mean: 0 };
  let weighted = 0;
  let span = 0;
  for (let i = firstActive; i < lastActive; i++) {
    const v = value(samples[i] as CanarySample);
    const dt = (samples[i + 1] as CanarySample).atMs - (samples[i] as CanarySample).atMs;
    if (v === null || dt <= 0) continue;
    weighted += v * dt;
    span += dt;
  }
  // One active sample: its value is the mean.
  const only = value(samples[firstActive] as CanarySample);
  return { peak, mean: span > 0 ? weighted / span : (only ?? 0) };
}

/**
 * The room before the swarm: no request yet, at submit. Index -1, so the reads up to sample i are
 * i - (-1), one request each.
 */
const AT_SUBMIT = { index: -1, atMs: 0, doRequests: 0 };

/**
 * One row a second: the last sample at or before each whole second (seconds with no new sample
 * are left out), the SwarmRoom's requests a second since the row before (or since submit) with the
 * canary's own reads in between (one request each) taken off.
 */
export function toSecondRows(samples: readonly CanarySample[]): SecondRow[] {
  const rows: SecondRow[] = [];
  let previous: { index: number; atMs: number; doRequests: number | null } = AT_SUBMIT;
  let bucketStart = 0;
  for (let i = 0; i < samples.length; i++) {
    const sample = samples[i] as CanarySample;
    const next = samples[i + 1];
    const atS = Math.ceil(sample.atMs / 1_000);
    // The row of second atS ends with the last sample of that second.
    if (next !== undefined && Math.ceil(next.atMs / 1_000) === atS) continue;
    const bucket = samples.slice(bucketStart, i + 1);
    bucketStart = i + 1;
    let roomRequestsPerS: number | null = null;
    if (previous.doRequests !== null && sample.doRequests !== null && sample.atMs > previous.atMs) {
      const requests = Math.max(0, sample.doRequests - previous.doRequests - (i - previous.index));
      roomRequestsPerS = (requests * 1_000) / (sample.atMs - previous.atMs);
    }
    const lanes = nonNull(bucket.map((s) => s.lanes));
    rows.push({
      atS,
      inFlight: Math.max(...bucket.map((s) => s.inFlight)),
      lanes: lanes.length === 0 ? null : Math.max(...lanes),
      done: sample.done,
      roomRequestsPerS,
    });
    previous = { index: i, atMs: sample.atMs, doRequests: sample.doRequests };
  }
  return rows;
}

/** Peak over the second rows; mean from submit to the last read (the swarm's requests in all / its seconds). */
function toRoomRate(samples: readonly CanarySample[], rows: readonly SecondRow[]): PeakMean | null {
  const rates = nonNull(rows.map((r) => r.roomRequestsPerS));
  const last = samples.at(-1);
  if (rates.length === 0 || last === undefined || last.doRequests === null || last.atMs <= 0) return null;
  const requests = Math.max(0, last.doRequests - samples.length);
  return { peak: Math.max(...rates), mean: (requests * 1_000) / last.atMs };
}

function toTasksPerS(samples: readonly CanarySample[], tasks: number): number | null {
  const first = samples.find((s) => s.inFlight > 0);
  const end = samples.find((s) => s.done >= tasks) ?? samples.at(-1);
  if (first === undefined || end === undefined || end.atMs <= first.atMs) return null;
  return (end.done * 1_000) / (end.atMs - first.atMs);
}

/**
 * The capacity model's input from the measurement: the window the swarm ran with (at most its
 * tasks), and the lanes' mean time to headers and latency over the samples that had them; the
 * status p50 stands in for a stack without the dispatch view (headers with the answer).
 */
export function toModelInput(run: CanaryRun): { window: number; ttfbMs: number; latencyMs: number; concurrency: number; tasks: number } | null {
  const latencyMs = mean(nonNull(run.samples.map((s) => s.latencyMs))) ?? run.latencyP50Ms;
  if (latencyMs === null) return null;
  const ttfbMs = mean(nonNull(run.samples.map((s) => s.ttfbMs))) ?? latencyMs;
  return {
    window: Math.min(run.window, run.tasks),
    ttfbMs: Math.round(ttfbMs),
    latencyMs: Math.round(latencyMs),
    concurrency: run.agentConcurrency,
    tasks: run.tasks,
  };
}

export function toCanaryFigures(run: CanaryRun): CanaryFigures {
  const window = Math.min(run.window, run.tasks);
  const seconds = toSecondRows(run.samples);
  const input = toModelInput(run);
  const capacity = input === null ? null : toCapacity(input);
  const perTask = 1_000 / Math.max(1, run.tasks);
  const per1kTasks =
    run.billable === null
      ? null
      : {
          doRequests: Math.max(0, run.billable.doRequests - run.statusReads) * perTask,
          statusReadsLeftOut: run.statusReads,
          queueMessages: run.billable.queueMessagesSent * perTask,
          doRowsWritten: run.billable.doRowsWritten * perTask,
          d1RowsWritten: run.billable.d1RowsWritten * perTask,
        };
  let costPer1kTasks: CanaryFigures["costPer1kTasks"] = null;
  if (per1kTasks !== null) {
    // The SwarmRoom's rows and D1's, as measured (the executors' few are not in the status).
    const { doRequestsUsd, rowsUsd, queueUsd } = priceOperations({
      doRequests: per1kTasks.doRequests,
      rowsWritten: per1kTasks.doRowsWritten + per1kTasks.d1RowsWritten,
      queueMessages: per1kTasks.queueMessages,
    });
    // Executor duration is not in the status: the model's GB-s for the measured W, ttfb and latency.
    const durationUsdModel = capacity === null ? null : capacity.executorGbSecondsPer1kTasks * PRICES.doGbSecondUsd;
    costPer1kTasks = { doRequestsUsd, rowsUsd, queueUsd, durationUsdModel, totalUsd: doRequestsUsd + rowsUsd + queueUsd + (durationUsdModel ?? 0) };
  }
  const ttfbs = nonNull(run.samples.map((s) => s.ttfbMs));
  const latencies = nonNull(run.samples.map((s) => s.latencyMs));
  return {
    tasks: run.tasks,
    window,
    succeeded: run.succeeded,
    failed: run.failed,
    ramp: toRamp(run.samples, window),
    inFlight: toPeakMean(run.samples, (s) => s.inFlight) ?? { peak: 0, mean: 0 },
    lanes: toPeakMean(run.samples, (s) => s.lanes),
    slotsPeak: toPeakMean(run.samples, (s) => s.slots)?.peak ?? null,
    roomRequestsPerS: toRoomRate(run.samples, seconds),
    tasksPerS: toTasksPerS(run.samples, run.tasks),
    timing: { ttfbMs: mean(ttfbs), latencyMs: mean(latencies), p50Ms: run.latencyP50Ms, p95Ms: run.latencyP95Ms },
    per1kTasks,
    costPer1kTasks,
    model: input === null || capacity === null ? null : { input, capacity },
    seconds,
  };
}
