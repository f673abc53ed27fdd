// The live event contract of GET /v1/swarms/:id/live and /events (docs/data.md "Live events"): the event
// shapes, the ETA, and which events a resume can replay. No I/O; the SwarmRoom's swarm-live.ts sends them.
import { toEndedCount, type SwarmState, type SwarmStatus, type TaskState } from "./swarm-contract.ts";

export type LiveEventType = "snapshot" | "tasks" | "progress" | "done";

/** One task as the grid draws it: [task id, state, attempts]. A tuple keeps a 10,000-task snapshot near 300 KB. */
export type LiveTask = [id: string, state: TaskState, attempts: number];

export interface LiveProgress {
  state: SwarmState;
  tasks: number;
  counts: SwarmStatus["counts"];
  usage: SwarmStatus["usage"];
  cost_usd: number;
  window: number;
  max_window: number;
  latency_ms: SwarmStatus["latency_ms"];
  retries: SwarmStatus["retries"];
  tool_calls: number;
  wall_s: number;
  /** Seconds until every task has ended at the rate so far; null before the first task ends or once the swarm has. */
  eta_s: number | null;
}

export type LiveEvent =
  | { id: number; type: "snapshot"; data: { status: SwarmStatus; tasks: LiveTask[]; window_history: [at_ms: number, window: number][] } }
  | { id: number; type: "tasks"; data: { tasks: LiveTask[] } }
  | { id: number; type: "progress"; data: LiveProgress }
  | { id: number; type: "done"; data: { id: string; state: SwarmState; status: SwarmStatus } };

/** A client is sent at most one `tasks` and one `progress` event per interval, however many tasks change. */
export const LIVE_INTERVAL_MS = 500;
/** Events kept for resuming; an older Last-Event-ID gets a fresh snapshot instead. */
export const LIVE_RING_SIZE = 2_000;

/** Remaining seconds at the mean rate so far: (elapsed / ended) × open tasks. */
export function estimateEtaS(counts: SwarmStatus["counts"], tasks: number, wallS: number, finished: boolean): number | null {
  if (finished) return null;
  const ended = toEndedCount(counts);
  if (ended === 0 || wallS <= 0) return null;
  const open = Math.max(0, tasks - ended);
  return Math.round((wallS / ended) * open * 10) / 10;
}

/** The progress event of a status. */
export function toLiveProgress(
  status: Pick<
    SwarmStatus,
    "state" | "tasks" | "counts" | "usage" | "cost_usd" | "window" | "max_window" | "latency_ms" | "retries" | "tool_calls" | "wall_s" | "finished_at"
  >,
): LiveProgress {
  const finished = status.finished_at !== null || status.state === "cancelled";
  return {
    state: status.state,
    tasks: status.tasks,
    counts: status.counts,
    usage: status.usage,
    cost_usd: status.cost_usd,
    window: status.window,
    max_window: status.max_window,
    latency_ms: status.latency_ms,
    retries: status.retries,
    tool_calls: status.tool_calls,
    wall_s: status.wall_s,
    eta_s: estimateEtaS(status.counts, status.tasks, status.wall_s, finished),
  };
}

/**
 * Whether the events after `lastId` can be replayed: the log is complete after `completeAfter`
 * (the last snapshot taken after a gap), and still holds everything after `lastId`.
 */
export function canReplayFrom(lastId: number, log: { lastId: number; oldestId: number | null; completeAfter: number; gap: boolean }): boolean {
  if (log.gap || lastId > log.lastId || lastId < log.completeAfter) return false;
  if (lastId === log.lastId) return true;
  return log.oldestId !== null && log.oldestId <= lastId + 1;
}

/** A Last-Event-ID (header or query): a non-negative decimal, else null (start from a snapshot). */
export function parseLastEventId(text: string | null | undefined): number | null {
  if (text === null || text === undefined || !/^\d{1,15}$/.test(text.trim())) return null;
  return Number(text.trim());
}

/** One event in the SSE wire format: `id:`, `event:` and one `data:` line. */
export function toSseFrame(event: { id: number; type: string; data: unknown }): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
