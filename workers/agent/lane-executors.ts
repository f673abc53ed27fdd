// The agent's port to its lane executors (lane-executor.ts): one Durable Object per ticket, named
// after it, so a ticket delivered twice reaches the same executor. It decides nothing.
import type { LaneExecutor } from "./lane-executor.ts";
import type { TaskPool } from "../../src/core/swarm-contract.ts";
import type { Ticket } from "../../src/core/ticket.ts";

export interface LaneExecutors {
  /** Hands `ticket` to its executor, which runs its lane from its own alarm; `started` false: it already had it. */
  start(ticket: Ticket, pool: TaskPool): Promise<{ started: boolean }>;
}

/** The executor's name: one per ticket of a swarm. */
export function toExecutorName(ticket: Pick<Ticket, "swarm_id" | "ticket">): string {
  return `${ticket.swarm_id}/${ticket.ticket}`;
}

export function toLaneExecutors(namespace: DurableObjectNamespace<LaneExecutor>): LaneExecutors {
  return {
    start: (ticket, pool) => namespace.get(namespace.idFromName(toExecutorName(ticket))).start(ticket, pool),
  };
}
