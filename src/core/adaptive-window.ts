// The swarm's adaptive window W (tasks in flight): multiplicative decrease on rate limits, additive
// increase on success, between 1 and the spec's concurrency — the swarm converges to what the
// upstream allows instead of feeding a 429 storm. No I/O.

export interface WindowState {
  window: number;
  /** Fractional progress towards the next +1 (each success adds 1/window). */
  credit: number;
}

export interface WindowEvents {
  successes: number;
  /** Whether any call of this round was rate limited. */
  rateLimited: boolean;
}

/**
 * One round of outcomes (one recordResults). A round with a 429 halves the window once — not once
 * per 429, since one burst answers many calls at once; otherwise each success adds 1/W (about +1
 * per window's worth of successes, as in TCP congestion avoidance).
 */
export function adjustWindow(state: WindowState, events: WindowEvents, max: number): WindowState {
  if (events.rateLimited) return { window: Math.max(1, Math.floor(state.window / 2)), credit: 0 };
  let { window, credit } = state;
  for (let i = 0; i < events.successes && window < max; i += 1) {
    credit += 1 / window;
    if (credit >= 1) {
      window += 1;
      credit -= 1;
    }
  }
  return { window: Math.min(max, Math.max(1, window)), credit: window >= max ? 0 : credit };
}

/** Retries a swarm may spend by default: half its tasks, at least 10. */
export function defaultRetryBudget(taskCount: number): number {
  return Math.max(10, Math.ceil(taskCount / 2));
}
