// Starts one swarm from a validated, planned spec: the single path shared by POST /v1/swarms and cron.
// The SwarmRoom stores the tasks, writes the D1 index row and starts dispatch; nothing is kept here.
import { admitSwarm } from "../../src/core/admit-swarm.ts";
import { ApiError } from "../../src/core/errors.ts";
import { checkToolTargets } from "../../src/core/tool-targets.ts";
import type { PlannedSwarm } from "../../src/core/parse-swarm-spec.ts";
import type { StartSwarmInput } from "../../src/core/swarm-contract.ts";
import type { OrchestratorDeps } from "./composition.ts";

export type StartSwarmDeps = Pick<OrchestratorDeps, "swarmRooms" | "newSwarmId" | "now" | "config" | "admission">;

export async function startSwarm(
  deps: StartSwarmDeps,
  tenant: string,
  swarm: PlannedSwarm,
  origin: StartSwarmInput["origin"],
  parentId?: string,
): Promise<{ swarmId: string }> {
  requireReachableTools(swarm, deps.config);
  requireAdmission(swarm, deps, tenant);
  const swarmId = deps.newSwarmId();
  const input: StartSwarmInput = { swarmId, tenant, spec: swarm.spec, tasks: swarm.tasks, createdAt: deps.now(), origin };
  if (parentId !== undefined) input.parentId = parentId;
  const { created, refused, code } = await deps.swarmRooms.start(input);
  // The room refuses what it cannot honour: a tenant whose monthly budget is spent (402), and again
  // (should the settings differ) what admission refuses (400).
  if (refused !== undefined && refused.length > 0) {
    if (code === "budget_exceeded") throw new ApiError("budget_exceeded", "this API token's monthly budget is spent", refused);
    throw new ApiError("invalid_spec", "the swarm spec cannot be run as given", refused);
  }
  // 100 random bits make a collision practically impossible; if the room says otherwise, the id
  // source is broken, and that must be loud rather than hand the caller someone else's swarm.
  if (!created) throw new Error(`SwarmRoom ${swarmId} already existed when it was started`);
  return { swarmId };
}

/**
 * Tools that could only ever reach refused addresses are refused now (400), not as tool errors
 * later: when a swarm starts, and when a schedule is saved (`at` = where the spec sits in the body).
 */
export function requireReachableTools(swarm: PlannedSwarm, config: Pick<OrchestratorDeps["config"], "allowPrivateNetwork">, at = ""): void {
  const targets = checkToolTargets(swarm.spec, config.allowPrivateNetwork);
  if (targets.length > 0) {
    throw new ApiError(
      "invalid_spec",
      "the swarm's tools target addresses they may not reach",
      targets.map((p) => ({ ...p, path: `${at}${p.path}` })),
    );
  }
}

/**
 * A spec the engine cannot honour as configured (a model the gateway does not serve, a fallback tier
 * no gateway model has, a USD budget over a model without a price) is refused with 400 before any
 * SwarmRoom exists: when a swarm starts, and when a schedule is saved (`at` as above).
 */
export function requireAdmission(swarm: PlannedSwarm, deps: Pick<OrchestratorDeps, "admission">, tenant: string, at = ""): void {
  const admitted = admitSwarm(swarm.spec, deps.admission(tenant));
  if (!admitted.ok) {
    throw new ApiError(
      "invalid_spec",
      "the swarm spec cannot be run as given",
      admitted.error.map((d) => ({ ...d, path: `${at}${d.path}` })),
    );
  }
}
