// An exponential moving average of a lane's samples (times to headers, latencies, timer lateness).

export interface MovingAverage {
  add(sample: number): void;
  /** null before the first sample. */
  current(): number | null;
}

/** Each new sample weighs `weight`; the first is taken whole; negative samples count as 0. */
export function createMovingAverage(weight: number): MovingAverage {
  let value: number | null = null;
  return {
    add(sample) {
      const x = Math.max(0, sample);
      value = value === null ? x : value + weight * (x - value);
    },
    current: () => value,
  };
}
