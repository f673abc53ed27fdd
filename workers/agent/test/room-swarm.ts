// A swarm started in the real SwarmRoom (the auxiliary orchestrator Worker of the agent project),
// with the status and results reads the agent tests assert on.
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { StartSwarmInput, SwarmStatusWire, TaskResult } from "../../../src/core/swarm-contract.ts";

export interface RoomSwarm {
  swarmId: string;
  stub: ReturnType<typeof env.SWARM_ROOM.get>;
  status(): Promise<SwarmStatusWire>;
  results(): Promise<TaskResult[]>;
}

export async function startRoomSwarm(input: StartSwarmInput): Promise<RoomSwarm> {
  const { swarmId, tenant } = input;
  const stub = env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));
  expect(await stub.start(input)).toEqual({ created: true });
  return {
    swarmId,
    stub,
    async status() {
      const status = await stub.getStatus(tenant);
      if (status === null) throw new Error(`swarm ${swarmId} not found`);
      return status;
    },
    async results() {
      const page = await stub.getResults(tenant, null, 1_000);
      if (page === null) throw new Error(`swarm ${swarmId} not found`);
      return page.results;
    },
  };
}
