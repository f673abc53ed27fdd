// The swarm's adaptive window W (tasks in flight): multiplicative decrease on rate limits, additive
// increase on success, between 1 and the spec's concurrency — the swarm converges to what the
// upstream allows instead of feeding a 429 storm. No I/O.

export interface WindowState {
  window: number;
  /** Fractional progress towards the next +1 (each success adds 1/window). */
  credit: number;
  /** When the window last shrank (epoch ms), or null. */
  decreasedAt: number | null;
}

export interface WindowEvents {
  successes: number;
  /** Whether any call of this round was rate limited. */
  rateLimited: boolean;
  now: number;
}

/** Multiplicative decrease factor (CUBIC's β: gentler than halving, still converging). */
export const WINDOW_DECREASE = 0.7;
/**
 * At most one decrease per interval: the 429s of one burst arrive over several rounds, and
 * shrinking once per 429 round would collapse the window long after it had already reacted.
 */
export const WINDOW_DECREASE_INTERVAL_MS = 1_000;

/**
 * One round of outcomes (one recordResults). A round with a 429 shrinks the window once (×0.7, at
 * most once a second) — not once per 429; otherwise each success adds 1/W (about +1 per window's
 * worth of successes, as in TCP congestion avoidance).
 */
export function adjustWindow(state: WindowState, events: WindowEvents, max: number): WindowState {
  if (events.rateLimited) {
    if (state.decreasedAt !== null && events.now - state.decreasedAt < WINDOW_DECREASE_INTERVAL_MS) return { ...state, credit: 0 };
    return { window: Math.max(1, Math.floor(state.window * WINDOW_DECREASE)), credit: 0, decreasedAt: events.now };
  }
  let { window, credit } = state;
  for (let i = 0; i < events.successes && window < max; i += 1) {
    credit += 1 / window;
    if (credit >= 1) {
      window += 1;
      credit -= 1;
    }
  }
  return { window: Math.min(max, Math.max(1, window)), credit: window >= max ? 0 : credit, decreasedAt: state.decreasedAt };
}

/**
 * Retries a swarm may spend by default: one per task, at least 10. 429s spend it too (never a
 * task's attempts), so it must carry an upstream that throttles one call in five (≈ 0.4 retries
 * a task with the usual 5xx and cut connections on top) with room to spare, while a dead upstream
 * still gets at most twice the swarm's calls.
 */
export function defaultRetryBudget(taskCount: number): number {
  return Math.max(10, taskCount);
}
