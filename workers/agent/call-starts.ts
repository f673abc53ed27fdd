// Notes each model call in its SwarmRoom before the request leaves, so a call whose outcome dies
// with its lane is still on the bill (as `unknown`, at an estimate). The starts of one swarm share
// RPCs: every call that starts while one note is in flight goes in the next, so a busy lane makes
// about one RPC per round trip, not one per call. It never sends a model request itself.
import type { CallStart } from "../../src/core/swarm-contract.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";
import type { SwarmRoomRpc, SwarmRooms } from "./swarm-rooms.ts";

export interface CallStarts {
  /** Resolves true once the room holds the start (the call may be sent), false if it could not be noted (it must not be). */
  note(swarmId: string, start: CallStart): Promise<boolean>;
}

export interface CallStartsTally {
  /** startCalls RPCs that answered, and those that threw (their calls were not sent). */
  startNotes: number;
  startNoteErrors: number;
}

interface Waiting {
  start: CallStart;
  resolve: (noted: boolean) => void;
}

interface SwarmStarts {
  room: SwarmRoomRpc;
  queue: Waiting[];
  sending: boolean;
}

export function createCallStarts(rooms: SwarmRooms, tally: CallStartsTally): CallStarts {
  const swarms = new Map<string, SwarmStarts>();

  async function drain(swarmId: string, swarm: SwarmStarts): Promise<void> {
    swarm.sending = true;
    // The calls a pull's answer starts reach this through several awaits each (the header gate, the
    // permit): a macrotask lets all of them queue, so they share one RPC instead of one each.
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    while (swarm.queue.length > 0) {
      const batch = swarm.queue.splice(0);
      let noted = false;
      try {
        await swarm.room.startCalls(batch.map((w) => w.start));
        tally.startNotes += 1;
        noted = true;
      } catch (error) {
        tally.startNoteErrors += 1;
        console.error(JSON.stringify({ event: "call_start_note_failed", swarm_id: swarmId, calls: batch.length, error: toErrorMessage(error) }));
      }
      for (const waiting of batch) waiting.resolve(noted);
    }
    swarm.sending = false;
  }

  return {
    note(swarmId, start) {
      let swarm = swarms.get(swarmId);
      if (swarm === undefined) {
        swarm = { room: rooms(swarmId), queue: [], sending: false };
        swarms.set(swarmId, swarm);
      }
      const target = swarm;
      const noted = new Promise<boolean>((resolve) => target.queue.push({ start, resolve }));
      if (!target.sending) void drain(swarmId, target);
      return noted;
    },
  };
}
