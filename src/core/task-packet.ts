// The queue message: a packet of task references. Prompts stay in the SwarmRoom, so a message
// stays far below the 128 KB queue limit whatever the prompts are. No I/O.
import { z } from "zod";
import { TaskIdSchema } from "./spec-schema.ts";

export const MAX_TASKS_PER_PACKET = 100;

export const TaskPacketSchema = z.strictObject({
  v: z.literal(1),
  swarm_id: z.string().min(1).max(64),
  task_ids: z.array(TaskIdSchema).min(1).max(MAX_TASKS_PER_PACKET),
});
export type TaskPacket = z.infer<typeof TaskPacketSchema>;

/** Splits task ids into packets of at most `size` ids, keeping their order. */
export function toPackets(swarmId: string, taskIds: readonly string[], size: number): TaskPacket[] {
  const step = Math.min(MAX_TASKS_PER_PACKET, Math.max(1, Math.floor(size)));
  const packets: TaskPacket[] = [];
  for (let i = 0; i < taskIds.length; i += step) {
    packets.push({ v: 1, swarm_id: swarmId, task_ids: taskIds.slice(i, i + step) });
  }
  return packets;
}

/** `sendBatch` takes at most 100 messages and 256 KB; stay a little under the byte limit. */
export const SEND_BATCH_MAX_MESSAGES = 100;
export const SEND_BATCH_MAX_BYTES = 250_000;

/** Groups packets into `sendBatch` calls that respect the queue's per-call limits. */
export function toSendBatches(packets: readonly TaskPacket[]): TaskPacket[][] {
  const batches: TaskPacket[][] = [];
  let current: TaskPacket[] = [];
  let bytes = 0;
  for (const packet of packets) {
    const size = JSON.stringify(packet).length + 64;
    if (current.length > 0 && (current.length >= SEND_BATCH_MAX_MESSAGES || bytes + size > SEND_BATCH_MAX_BYTES)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(packet);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** Tasks per packet: 1, or enough that one consumer batch of 100 messages carries the whole window. */
export function toPacketSize(setting: string | undefined, window: number): number {
  const fixed = Number(setting);
  if (setting !== undefined && setting !== "" && setting !== "auto" && Number.isInteger(fixed) && fixed >= 1) {
    return Math.min(fixed, MAX_TASKS_PER_PACKET);
  }
  return Math.min(MAX_TASKS_PER_PACKET, Math.max(1, Math.ceil(window / SEND_BATCH_MAX_MESSAGES)));
}
