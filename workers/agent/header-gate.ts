// The lane's gate on connections waiting for response headers. Production allows an invocation 6
// (developers.cloudflare.com/workers/platform/limits/#simultaneous-open-connections) and queues the
// rest; `wrangler dev` enforces none, so local figures would flatter a design that needs more. The
// gate makes the limit hold everywhere. It queues callers first come, first served; it drops nothing.
import type { HeaderGate } from "../../src/model/model-client.ts";

export interface MeasuredHeaderGate extends HeaderGate {
  /** Callers waiting for a slot now. */
  waiting(): number;
}

/** `slots` ≤ 0: no gate (every acquire is granted at once). */
export function createHeaderGate(slots: number): MeasuredHeaderGate {
  const width = Math.floor(slots);
  const queue: (() => void)[] = [];
  let held = 0;
  const release = (): void => {
    const next = queue.shift();
    if (next === undefined) held -= 1;
    else next();
  };
  return {
    acquire() {
      if (width <= 0) return Promise.resolve(() => {});
      const slot = new Promise<void>((resolve) => {
        if (held < width) {
          held += 1;
          resolve();
        } else {
          // The slot is handed over by release(), which keeps `held` unchanged.
          queue.push(resolve);
        }
      });
      return slot.then(() => {
        let freed = false;
        return () => {
          if (freed) return;
          freed = true;
          release();
        };
      });
    },
    waiting: () => queue.length,
  };
}
