// Starts one swarm from a validated, planned spec: the single path shared by POST /v1/swarms and cron.
// The SwarmRoom stores the tasks, writes the D1 index row and starts dispatch; nothing is kept here.
import type { PlannedSwarm } from "../../src/core/parse-swarm-spec.ts";
import type { StartSwarmInput } from "../../src/core/swarm-contract.ts";
import type { OrchestratorDeps } from "./composition.ts";

export type StartSwarmDeps = Pick<OrchestratorDeps, "swarmRooms" | "newSwarmId" | "now">;

export async function startSwarm(
  deps: StartSwarmDeps,
  tenant: string,
  swarm: PlannedSwarm,
  origin: StartSwarmInput["origin"],
): Promise<{ swarmId: string }> {
  const swarmId = deps.newSwarmId();
  const { created } = await deps.swarmRooms.start({ swarmId, tenant, spec: swarm.spec, tasks: swarm.tasks, createdAt: deps.now(), origin });
  // 100 random bits make a collision practically impossible; if the room says otherwise, the id
  // source is broken, and that must be loud rather than hand the caller someone else's swarm.
  if (!created) throw new Error(`SwarmRoom ${swarmId} already existed when it was started`);
  return { swarmId };
}
