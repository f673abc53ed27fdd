// What a lane knows of its calls before one has ended: how long they take to their response
// headers, and how long the oldest call past its headers has run without an answer. A call's
// latency is at least that long, so the lane's gate carries at least 6 × that / time to headers
// (src/core/lane-sizing.ts, toUntimedLaneSlots), long before its first call ends.
import { createMovingAverage } from "./moving-average.ts";

export interface UntimedCalls {
  /** A call of `taskId` has its headers, `elapsedMs` after it was sent (and runs on until ended). */
  headers(taskId: string, elapsedMs: number): void;
  /** The task's call has answered or failed (or the task has ended): it no longer bounds anything. */
  ended(taskId: string): void;
  /**
   * The calls' time to headers (a moving average; null: none yet): what a call holds a gate slot
   * for. Not the first call's alone: it pays the isolate's first connection and a start's load
   * (105–145 ms on this 2-core machine with headers at once, W = 1,000, where later calls took less).
   */
  headersMs(): number | null;
  /** How long the oldest call past its headers has run without an answer, ms (0: none runs). */
  runningForMs(): number;
  /** Calls past their headers with no answer yet. */
  size(): number;
}

/** The weight of each new time to headers in the mean. */
const HEADERS_WEIGHT = 0.2;

/** By task: a task runs one call at a time (its backup ends with it). `now` in epoch ms. */
export function createUntimedCalls(now: () => number): UntimedCalls {
  const sentAt = new Map<string, number>();
  const meanMs = createMovingAverage(HEADERS_WEIGHT);
  return {
    headers(taskId, elapsedMs) {
      sentAt.set(taskId, now() - Math.max(0, elapsedMs));
      meanMs.add(elapsedMs);
    },
    ended(taskId) {
      sentAt.delete(taskId);
    },
    headersMs: () => meanMs.current(),
    runningForMs() {
      let oldest: number | null = null;
      for (const at of sentAt.values()) oldest = Math.min(oldest ?? at, at);
      return oldest === null ? 0 : Math.max(0, now() - oldest);
    },
    size: () => sentAt.size,
  };
}
