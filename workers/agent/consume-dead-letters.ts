// The dead-letter-queue handler: the queue gave up on these packets, so their still-open tasks end
// `failed` with class dead_letter in their SwarmRoom. It makes no model call and decides nothing.
import { backoffDelayMs, toQueueDelaySeconds } from "../../src/core/retry-policy.ts";
import { groupPackets } from "./group-packets.ts";
import type { SwarmRooms } from "./swarm-rooms.ts";

export async function consumeDeadLetters(batch: MessageBatch<unknown>, rooms: SwarmRooms): Promise<void> {
  const { swarms, unreadable } = groupPackets(batch);
  let acked = 0;
  let retried = 0;
  await Promise.all(
    swarms.map(async (packets) => {
      try {
        await rooms(packets.swarmId).recordDeadLetter(packets.taskIds);
      } catch (error) {
        // Acking now would leave the tasks open until their leases expire; try again later.
        console.error(
          JSON.stringify({
            event: "swarm_room_rpc_failed",
            rpc: "recordDeadLetter",
            swarm_id: packets.swarmId,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
        for (const { message } of packets.messages) {
          message.retry({ delaySeconds: toQueueDelaySeconds(backoffDelayMs(message.attempts, null)) });
          retried += 1;
        }
        return;
      }
      for (const { message } of packets.messages) {
        message.ack();
        acked += 1;
      }
    }),
  );
  console.log(
    JSON.stringify({ event: "dead_letter_batch", queue: batch.queue, messages: batch.messages.length, unreadable, swarms: swarms.length, acked, retried }),
  );
}
