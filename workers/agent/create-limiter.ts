// A first-come-first-served bound on how many model calls run at once across a whole consumer
// batch, shared by every swarm's rounds. It only queues work; it never drops or retries it.

export interface Limiter {
  /** Runs `fn` once a slot is free (in the order of the calls to `run`) and frees the slot when it settles. */
  run<T>(fn: () => Promise<T>): Promise<T>;
}

/** A limit below 1 (or NaN) counts as 1. */
export function createLimiter(limit: number): Limiter {
  const width = Number.isNaN(limit) ? 1 : Math.max(1, Math.floor(limit));
  const waiting: (() => void)[] = [];
  let active = 0;

  const acquire = async (): Promise<void> => {
    if (active < width) {
      active += 1;
      return;
    }
    // The slot is handed over by release(), which keeps `active` unchanged.
    await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const release = (): void => {
    const next = waiting.shift();
    if (next === undefined) active -= 1;
    else next();
  };

  return {
    async run(fn) {
      await acquire();
      try {
        return await fn();
      } finally {
        release();
      }
    },
  };
}
