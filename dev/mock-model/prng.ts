// Seeded pseudo-random numbers (mulberry32) and normal deviates: the only randomness the mock uses.

export interface Prng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Standard normal deviate (mean 0, stddev 1). */
  normal(): number;
}

export function createPrng(seed: number): Prng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = (): number => {
    // Box-Muller; 1 - next() is in (0, 1] so the log is finite.
    const u = 1 - next();
    const v = next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
  return { next, normal };
}
