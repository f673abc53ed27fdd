// The dead-letter-queue handler: the queue gave up on these tickets (their lanes kept dying before
// reaching the room). Each ticket is closed in its SwarmRoom, which issues another while work is
// left; the tasks those lanes had leased come back through their leases. No model call, no decision.
import { backoffDelayMs, toQueueDelaySeconds } from "../../src/core/retry-policy.ts";
import { toTicket } from "../../src/core/ticket.ts";
import type { SwarmRooms } from "./swarm-rooms.ts";
import { toErrorMessage } from "../../src/core/error-message.ts";

export async function consumeDeadLetters(batch: MessageBatch<unknown>, rooms: SwarmRooms): Promise<void> {
  let acked = 0;
  let retried = 0;
  let unreadable = 0;
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = toTicket(message.body, message.id);
      if (!parsed.ok) {
        unreadable += 1;
        message.ack();
        return;
      }
      try {
        await rooms(parsed.value.swarm_id).recordDeadTicket(parsed.value.ticket);
        message.ack();
        acked += 1;
      } catch (error) {
        console.error(
          JSON.stringify({
            event: "swarm_room_rpc_failed",
            rpc: "recordDeadTicket",
            swarm_id: parsed.value.swarm_id,
            error: toErrorMessage(error),
          }),
        );
        message.retry({ delaySeconds: toQueueDelaySeconds(backoffDelayMs(message.attempts, null)) });
        retried += 1;
      }
    }),
  );
  console.log(JSON.stringify({ event: "dead_letter_batch", queue: batch.queue, messages: batch.messages.length, unreadable, acked, retried }));
}
