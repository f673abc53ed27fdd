// Cron's second job: wake every unfinished swarm, so a swarm whose alarm was lost resumes within a
// tick. In production alarms survive restarts and deploys, and this is a safety net; `wrangler dev`
// keeps no alarm across a restart (workers-sdk#7781, workerd#3138), so locally it is what resumes a
// swarm after the stack was killed: the local stack triggers the cron handler every few seconds.
import { mapWithConcurrency } from "../../src/core/map-with-concurrency.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";
import type { OrchestratorDeps } from "./composition.ts";

/** Swarms woken per tick at most (oldest first); a wake is one cheap RPC that reads no task. */
const WAKE_LIMIT = 500;
const WAKE_CONCURRENCY = 16;

export async function wakeSwarms(deps: Pick<OrchestratorDeps, "swarmIndex" | "swarmRooms">): Promise<{ checked: number; woken: number; failed: number }> {
  const ids = await deps.swarmIndex.listUnfinished(WAKE_LIMIT);
  const outcomes = await mapWithConcurrency(ids, WAKE_CONCURRENCY, async (id) => {
    try {
      return (await deps.swarmRooms.wake(id)).woken ? "woken" : "idle";
    } catch (error) {
      console.error(JSON.stringify({ event: "swarm_wake_failed", swarm_id: id, error: toErrorMessage(error) }));
      return "failed";
    }
  });
  return {
    checked: ids.length,
    woken: outcomes.filter((o) => o === "woken").length,
    failed: outcomes.filter((o) => o === "failed").length,
  };
}
