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
 * The one object of another agent process that starts the executors there (LaneExecutor.startHere);
 * an executor's name always holds a "/". `wrangler dev` reaches an object of another session through
 * a proxy object that miniflare makes in the caller's process for each object, each with a
 * connection of its own to the other workerd's debug port (`createProxyDurableObjectClass` and
 * `connectToActor`, miniflare's dev-registry-proxy.worker.js). Started directly, the 7–8 executors
 * of a header-bound swarm in the other process ran their alarms 82–112 ms after the consumer's batch
 * came; through one relay, 50–75 ms (docs/benchmarks.md). Production has one host, and no relay.
 */
export const RELAY_NAME = "relay";

/**
 * Executors in `namespace`, or spread by name over it and `more` (the local stack's other agent
 * processes: composition.ts, toSpreadExecutors), each name always in the same one; those of `more`
 * started through their process's relay (RELAY_NAME).
 */
export function toLaneExecutors(namespace: DurableObjectNamespace<LaneExecutor>, more: readonly DurableObjectNamespace<LaneExecutor>[] = []): LaneExecutors {
  const hosts = [namespace, ...more];
  return {
    start: (ticket, pool) => {
      const name = toExecutorName(ticket);
      const index = toExecutorHost(name, hosts.length);
      const host = hosts[index];
      if (index === 0 || host === undefined) return namespace.get(namespace.idFromName(name)).start(ticket, pool);
      return host.get(host.idFromName(RELAY_NAME)).startHere(name, ticket, pool);
    },
  };
}
