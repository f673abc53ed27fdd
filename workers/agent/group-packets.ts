// Reads a queue batch as task packets grouped by swarm, so each handler makes one SwarmRoom RPC per
// swarm. Parsing only: it acks nothing except unreadable messages, which belong to no task.
import { TaskPacketSchema } from "../../src/core/task-packet.ts";

export interface PacketMessage {
  message: Message<unknown>;
  taskIds: string[];
}

export interface SwarmPackets {
  swarmId: string;
  messages: PacketMessage[];
  /** The task ids of all messages, each once (a batch may carry a task twice after a redelivery). */
  taskIds: string[];
}

/**
 * Groups the batch's packets by swarm, in order of first appearance. A message that is not a
 * packet is logged and acked here: it names no task the SwarmRoom could account for, so no
 * redelivery could ever succeed, and retrying it would only cycle it into the dead-letter queue.
 */
export function groupPackets(batch: MessageBatch<unknown>): { swarms: SwarmPackets[]; unreadable: number } {
  const bySwarm = new Map<string, SwarmPackets>();
  const seen = new Map<string, Set<string>>();
  let unreadable = 0;
  for (const message of batch.messages) {
    const parsed = TaskPacketSchema.safeParse(message.body);
    if (!parsed.success) {
      unreadable += 1;
      console.error(
        JSON.stringify({
          event: "unreadable_message",
          queue: batch.queue,
          message_id: message.id,
          issues: parsed.error.issues.slice(0, 5).map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`),
        }),
      );
      message.ack();
      continue;
    }
    const packet = parsed.data;
    let group = bySwarm.get(packet.swarm_id);
    if (group === undefined) {
      group = { swarmId: packet.swarm_id, messages: [], taskIds: [] };
      bySwarm.set(packet.swarm_id, group);
    }
    group.messages.push({ message, taskIds: packet.task_ids });
    const known = seen.get(packet.swarm_id) ?? new Set<string>();
    seen.set(packet.swarm_id, known);
    for (const taskId of packet.task_ids) {
      if (known.has(taskId)) continue;
      known.add(taskId);
      group.taskIds.push(taskId);
    }
  }
  return { swarms: [...bySwarm.values()], unreadable };
}
