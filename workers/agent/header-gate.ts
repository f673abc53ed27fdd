// The lane's gate on connections waiting for response headers. Production allows an invocation 6
// (developers.cloudflare.com/workers/platform/limits/#simultaneous-open-connections) and queues the
// rest; `wrangler dev` enforces none, so local figures would flatter a design that needs more. The
// gate makes the limit hold everywhere. It queues callers first come, first served; a caller that
// must start by a deadline (its call must end inside its task's lease) gives up its place then.
import type { HeaderSlot } from "../../src/model/model-client.ts";

/** Hands out slots: `acquire` resolves with the function that frees one (idempotent). */
export interface HeaderGate {
  acquire(): Promise<() => void>;
}

export interface MeasuredHeaderGate extends HeaderGate {
  /** Callers waiting for a slot now. */
  waiting(): number;
  /**
   * Calls `listener` once, the next time the queue empties (its last caller got a slot or gave up
   * its place); never if the queue is empty now and stays so.
   */
  onceDrained(listener: () => void): void;
  /**
   * The same gate for calls that must start by `deadline` (epoch ms, read on `now`): a caller that
   * would wait past it leaves the queue then, and its acquire rejects with HeaderSlotTimeout.
   */
  until(deadline: number, now?: () => number): HeaderGate;
}

/** No header slot came before the call's deadline: starting it then could outlast its task's lease. */
export class HeaderSlotTimeout extends Error {
  override readonly name = "HeaderSlotTimeout";
}

/** `slots` ≤ 0: no gate (every acquire is granted at once). */
export function createHeaderGate(slots: number): MeasuredHeaderGate {
  const width = Math.floor(slots);
  const queue: (() => void)[] = [];
  let held = 0;
  let drainListeners: (() => void)[] = [];
  const drained = (): void => {
    if (queue.length > 0 || drainListeners.length === 0) return;
    const listeners = drainListeners;
    drainListeners = [];
    for (const listener of listeners) listener();
  };
  const release = (): void => {
    const next = queue.shift();
    if (next === undefined) held -= 1;
    else {
      next();
      drained();
    }
  };
  const acquire = (deadline: number | null, now: () => number): Promise<() => void> => {
    if (width <= 0) return Promise.resolve(() => {});
    const slot = new Promise<void>((resolve, reject) => {
      const late = (): HeaderSlotTimeout => new HeaderSlotTimeout(`no connection slot (of ${width} waiting for headers) before the call's latest start`);
      if (held < width) {
        held += 1;
        resolve();
      } else if (deadline !== null && now() >= deadline) {
        reject(late());
      } else {
        // The slot is handed over by release(), which keeps `held` unchanged.
        let timer: ReturnType<typeof setTimeout> | null = null;
        const grant = (): void => {
          if (timer !== null) clearTimeout(timer);
          resolve();
        };
        queue.push(grant);
        if (deadline !== null) {
          timer = setTimeout(() => {
            const at = queue.indexOf(grant);
            if (at < 0) return;
            queue.splice(at, 1);
            reject(late());
            drained();
          }, deadline - now());
        }
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
  };
  return {
    acquire: () => acquire(null, Date.now),
    until: (deadline, now = Date.now) => ({ acquire: () => acquire(deadline, now) }),
    waiting: () => queue.length,
    onceDrained: (listener) => {
      drainListeners.push(listener);
    },
  };
}

/**
 * Takes a slot of `gate` for one call: the slot (the model client frees it when the headers
 * arrive), or null when none came before the call's latest start (no request was made).
 */
export async function takeHeaderSlot(gate: HeaderGate): Promise<HeaderSlot | null> {
  try {
    return { release: await gate.acquire() };
  } catch (error) {
    if (error instanceof HeaderSlotTimeout) return null;
    throw error;
  }
}

/**
 * A slot of `gate` for a tool's request, taken through a share of `width` slots first: tools hold at
 * most `width` of the gate at once, so however many tool calls wait, the model's calls always find
 * the rest of the invocation's connections.
 */
export function createToolSlots(gate: HeaderGate, width: number): () => Promise<() => void> {
  const share = createHeaderGate(Math.max(1, width));
  return async () => {
    const shared = await share.acquire();
    try {
      const slot = await gate.acquire();
      return () => {
        slot();
        shared();
      };
    } catch (error) {
      shared();
      throw error;
    }
  };
}
