// The agent's port to the SwarmRoom Durable Object: the RPCs it makes, and the adapter from
// the SWARM_ROOM namespace. It decides nothing; the handlers take this port so tests can fake it.
import type { SwarmRoom } from "../../src/durable/swarm-room.ts";
import type { CallStart, CallsReport, HedgeGrant, PullRequest, PullResponse, ScratchpadRequest, ScratchpadResponse } from "../../src/core/swarm-contract.ts";

export interface SwarmRoomRpc {
  /** Records a lane's outcomes and fills its free slots (continuous pull dispatch). */
  pull(request: PullRequest): Promise<PullResponse>;
  /** Notes calls about to be sent, before their requests leave (each is billed even if its outcome is lost). */
  startCalls(starts: CallStart[]): Promise<void>;
  /** May a call running past the swarm's hedge delay send its backup? Granted = noted (billed) and reserved. */
  hedgeCall(start: CallStart): Promise<HedgeGrant>;
  /** Ledger rows for calls that ended, ahead of their task's outcome; idempotent by call id. */
  recordCalls(reports: CallsReport[]): Promise<void>;
  /** The swarm's shared scratchpad (the scratchpad_* tools). */
  scratchpad(request: ScratchpadRequest): Promise<ScratchpadResponse>;
  /** The queue gave up on a ticket: the room closes it (and issues another while work is left). */
  recordDeadTicket(ticket: string): Promise<void>;
}

/** The SwarmRoom of one swarm, by swarm id. */
export type SwarmRooms = (swarmId: string) => SwarmRoomRpc;

export function toSwarmRooms(namespace: DurableObjectNamespace<SwarmRoom>): SwarmRooms {
  return (swarmId) => namespace.get(namespace.idFromName(swarmId));
}
