// A swarm's status as the API serves it, from the form the SwarmRoom returns over RPC (whose
// json_merge output is text: a recursive JSON type does not survive the RPC type mapping). No I/O.
import { fromWire } from "./reducers.ts";
import type { SwarmStatus, SwarmStatusWire } from "./swarm-contract.ts";

export function toPublicStatus(status: SwarmStatusWire): SwarmStatus {
  return { ...status, output: status.output === null ? null : fromWire(status.output) };
}
