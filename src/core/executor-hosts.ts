// Which of the agent's executor hosts runs a ticket's lane executor. Production has one: every
// Durable Object gets a CPU of its own there. The local stack may run the agent's executors in more
// than one workerd process (scripts/lib/local-stack.ts, agentProcesses), so that its lanes are not
// all on one thread. Pure. No I/O.
import { hash32 } from "./hash32.ts";

/** The most executor hosts: the agent processes the local stack may run, and the bindings the agent reads. */
export const MAX_EXECUTOR_HOSTS = 4;

/**
 * The host (0 … hosts − 1) of the executor named `name` (toExecutorName): the same name always
 * lands on the same host, so a ticket delivered twice still reaches the one executor that holds it.
 */
export function toExecutorHost(name: string, hosts: number): number {
  const count = Math.max(1, Math.floor(hosts));
  return count === 1 ? 0 : hash32(name) % count;
}
