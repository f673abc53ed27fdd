// The ramp of a run as the upstream saw it: the mock's in-flight count, sampled at a fixed step,
// from its first request until the run's peak. `npm run bench -- --ramp` prints it, to show how
// fast a runner fills its window. Pure: samples in, text out.

export interface InFlightSample {
  /** Epoch ms. */
  at: number;
  inFlight: number;
}

export interface Ramp {
  /** [ms since the first request, in flight] from the first request to the first sample at the peak. */
  points: Array<[number, number]>;
  /** The run's peak, and when a sample first saw it (ms after the first request); null if none did. */
  peak: number;
  peakAtMs: number | null;
}

/**
 * The samples from the mock's first request (`firstRequestAt`, epoch ms) to the first one that saw
 * the run's peak (`maxInFlight`), at most `limit` points. The peak may fall between two samples:
 * then no sample sees it, and the points run to `limit`.
 */
export function rampOf(samples: readonly InFlightSample[], firstRequestAt: number | null, maxInFlight: number, limit = 200): Ramp {
  const points: Array<[number, number]> = [];
  let peakAtMs: number | null = null;
  if (firstRequestAt === null) return { points, peak: maxInFlight, peakAtMs };
  for (const sample of samples) {
    if (sample.at < firstRequestAt) continue;
    const atMs = sample.at - firstRequestAt;
    points.push([atMs, sample.inFlight]);
    if (sample.inFlight >= maxInFlight) {
      peakAtMs = atMs;
      break;
    }
    if (points.length >= limit) break;
  }
  return { points, peak: maxInFlight, peakAtMs };
}

/** One line: `peak P at +T ms (R calls/ms on average to it): +0 ms 20, +10 ms 48, …`. */
export function formatRamp(ramp: Ramp): string {
  const head =
    ramp.peakAtMs === null
      ? `no sample saw the peak of ${ramp.peak}`
      : `peak ${ramp.peak} at +${ramp.peakAtMs} ms (${ramp.peakAtMs > 0 ? (ramp.peak / ramp.peakAtMs).toFixed(2) : "n/a"} calls/ms on average to it)`;
  return `${head}: ${ramp.points.map(([ms, n]) => `+${ms} ms ${n}`).join(", ")}`;
}

/**
 * The mean in flight over each `stepMs` from the mock's first request, to the last sample: how
 * full a runner keeps its window between its ramp and its tail (a runner whose slots wait for its
 * dispatch shows it here, not in the run's mean in flight, which is only its calls' time over its wall).
 */
export function inFlightBySteps(samples: readonly InFlightSample[], firstRequestAt: number | null, stepMs: number): Array<[number, number]> {
  if (firstRequestAt === null || stepMs <= 0) return [];
  const steps = new Map<number, { sum: number; n: number }>();
  for (const sample of samples) {
    if (sample.at < firstRequestAt) continue;
    const step = Math.floor((sample.at - firstRequestAt) / stepMs);
    const acc = steps.get(step) ?? { sum: 0, n: 0 };
    acc.sum += sample.inFlight;
    acc.n += 1;
    steps.set(step, acc);
  }
  return [...steps].sort(([a], [b]) => a - b).map(([step, { sum, n }]) => [step * stepMs, sum / n]);
}

/** One line: `+0 s 87, +0.5 s 81, …` (each step's mean, rounded). */
export function formatInFlightBySteps(steps: ReadonlyArray<[number, number]>): string {
  return steps.length === 0 ? "no request" : steps.map(([ms, mean]) => `+${ms / 1_000} s ${Math.round(mean)}`).join(", ");
}
