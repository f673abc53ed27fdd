// The agent's port to its lane executors (lane-executor.ts): one Durable Object per ticket, named
// after it, so a ticket delivered twice reaches the same executor. It decides nothing.
import type { LaneExecutor } from "./lane-executor.ts";
import type { TaskPool } from "../../src/core/swarm-contract.ts";
import type { Ticket } from "../../src/core/ticket.ts";
import { toExecutorHost } from "../../src/core/executor-hosts.ts";

export interface LaneExecutors {
  /** Hands `ticket` to its executor, which runs its lane from its own alarm; `started` false: it already had it. */
  start(ticket: Ticket, pool: TaskPool): Promise<{ started: boolean }>;
}

/** The executor's name: one per ticket of a swarm. */
export function toExecutorName(ticket: Pick<Ticket, "swarm_id" | "ticket">): string {
  return `${ticket.swarm_id}/${ticket.ticket}`;
}

/**
 * Executors in `namespace`, or spread by name over it and `more` (the local stack's other agent
 * processes: composition.ts, toSpreadExecutors), each name always in the same one.
 */
export function toLaneExecutors(namespace: DurableObjectNamespace<LaneExecutor>, more: readonly DurableObjectNamespace<LaneExecutor>[] = []): LaneExecutors {
  const hosts = [namespace, ...more];
  return {
    start: (ticket, pool) => {
      const name = toExecutorName(ticket);
      const host = hosts[toExecutorHost(name, hosts.length)] ?? namespace;
      return host.get(host.idFromName(name)).start(ticket, pool);
    },
  };
}
