// A swarm's backups simulated in virtual time, with the room's own policy (src/core/hedge-policy.ts):
// N tasks through a window of W slots, each call's latency drawn as the mock model draws it, a call
// that runs past the delay asking at 1×, 2× and 4× of it (as hedged-call.ts does), each ask a little
// late (a lane's pull and the room's RPC). What it leaves out: the lanes' standby tasks and pulls,
// the room's threshold moving with the swarm (the delay is fixed here), and the machine. It compares
// where the backups go, over many seeds; `npm run bench -- --hedge p95` measures the real thing.
import { sampleLatency, type LatencySpec } from "../../dev/mock-model/latency.ts";
import { createPrng } from "../../dev/mock-model/prng.ts";
import { mayHedge, toExpectedStragglers } from "../../src/core/hedge-policy.ts";

export interface HedgeSimulation {
  tasks: number;
  window: number;
  /** Backups the swarm may send (toHedgeLimit). */
  limit: number;
  /** The delay after which a call asks for its backup, ms. */
  afterMs: number;
  latency: LatencySpec;
  seed: number;
  /** The most an ask comes after its due time, ms (uniform: a lane's pull and the room's RPC). */
  askLateMs?: number;
}

/**
 * `paced`: the room's policy as it is. `first_come`: every ask treated as a later one, so none is
 * paced: the policy before pacing (the limit, then the tail rule).
 */
export type HedgePolicy = "paced" | "first_come";

export interface SimulatedSwarm {
  wallMs: number;
  sent: number;
}

const ASK_AT = [1, 2, 4] as const;
/** What `first_come` passes as every ask's multiple: a later ask, which is never paced. */
const LATER_ASK = 4;

interface SimEvent {
  at: number;
  kind: "end" | "ask";
  task: number;
  /** For an ask: its multiple of the delay. For an end: which call's end (a stale one is skipped). */
  n: number;
}

/** Runs one swarm; deterministic for a seed. */
export function simulateHedgedSwarm(sim: HedgeSimulation, policy: HedgePolicy): SimulatedSwarm {
  const draws = createPrng(sim.seed);
  const late = createPrng(sim.seed ^ 0x2545f491);
  const askLateMs = sim.askLateMs ?? 60;
  const events = new MinHeap<SimEvent>((a, b) => a.at - b.at);
  const startedAt: number[] = [];
  const endsAt: number[] = [];
  const active = new Set<number>();
  const hedged = new Set<number>();
  /** Finished calls' latencies, ascending (what the room's percentile and pacing read). */
  const finished: number[] = [];
  let finishedSum = 0;
  let launched = 0;
  let sent = 0;
  let wallMs = 0;

  const launch = (now: number): void => {
    const task = launched;
    launched += 1;
    const latencyMs = sampleLatency(sim.latency, draws);
    startedAt[task] = now;
    endsAt[task] = now + latencyMs;
    active.add(task);
    events.push({ at: now + latencyMs, kind: "end", task, n: endsAt[task] });
    for (const multiple of ASK_AT) {
      if (latencyMs > sim.afterMs * multiple) events.push({ at: now + sim.afterMs * multiple + late.next() * askLateMs, kind: "ask", task, n: multiple });
    }
  };
  while (launched < Math.min(sim.window, sim.tasks)) launch(0);

  for (let event = events.pop(); event !== undefined; event = events.pop()) {
    const { at, task } = event;
    if (!active.has(task)) continue;
    if (event.kind === "end") {
      if (event.n !== endsAt[task]) continue;
      active.delete(task);
      const latencyMs = at - (startedAt[task] as number);
      finished.splice(upperBound(finished, latencyMs), 0, latencyMs);
      finishedSum += latencyMs;
      wallMs = Math.max(wallMs, at);
      if (launched < sim.tasks) launch(at);
      continue;
    }
    if (hedged.has(task) || (endsAt[task] as number) <= at) continue;
    const running: number[] = [];
    for (const other of active) if (other !== task && !hedged.has(other)) running.push(at - (startedAt[other] as number));
    const may = mayHedge({
      limit: sim.limit,
      sent,
      waiting: sim.tasks - launched,
      window: sim.window,
      meanLatencyMs: finished.length === 0 ? null : finishedSum / finished.length,
      elapsedMs: at - (startedAt[task] as number),
      delays: policy === "paced" ? event.n : LATER_ASK,
      expectedStragglers: toExpectedStragglers(finished, running, sim.afterMs),
    });
    if (!may.ok) continue;
    sent += 1;
    hedged.add(task);
    const backupEndsAt = at + sampleLatency(sim.latency, draws);
    if (backupEndsAt < (endsAt[task] as number)) {
      endsAt[task] = backupEndsAt;
      events.push({ at: backupEndsAt, kind: "end", task, n: backupEndsAt });
    }
  }
  return { wallMs, sent };
}

export interface WallSummary {
  meanMs: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
}

/** The mean and percentiles (nearest rank) of many swarms' walls. */
export function summarizeWalls(walls: readonly number[]): WallSummary {
  const sorted = [...walls].sort((a, b) => a - b);
  const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
  const sum = sorted.reduce((total, ms) => total + ms, 0);
  return { meanMs: sorted.length === 0 ? 0 : sum / sorted.length, p50Ms: at(0.5), p90Ms: at(0.9), p99Ms: at(0.99) };
}

function upperBound(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A binary heap: the simulation's event queue. */
class MinHeap<T> {
  private readonly items: T[] = [];
  private readonly before: (a: T, b: T) => number;
  constructor(before: (a: T, b: T) => number) {
    this.before = before;
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.before(items[i] as T, items[parent] as T) >= 0) break;
      [items[i], items[parent]] = [items[parent] as T, items[i] as T];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < items.length && this.before(items[left] as T, items[least] as T) < 0) least = left;
      if (right < items.length && this.before(items[right] as T, items[least] as T) < 0) least = right;
      if (least === i) return top;
      [items[i], items[least]] = [items[least] as T, items[i] as T];
      i = least;
    }
  }
}
