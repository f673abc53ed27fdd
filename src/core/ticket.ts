// The task queue's message: a ticket that brings one consumer lane to a swarm. Tasks are not in
// it: the lane pulls them from the SwarmRoom, which stays the one owner of the window. No I/O.
import { z } from "zod";
import { TaskIdSchema } from "./spec-schema.ts";

export const TicketSchema = z.strictObject({
  v: z.literal(2),
  swarm_id: z.string().min(1).max(64),
  /** Unique per ticket the room issued; a redelivery of the message carries the same id. */
  ticket: z.string().min(1).max(64),
  /**
   * Slots the room counted this ticket's lane for: what the lane asks for until it has timed its own
   * calls (absent in tickets from rooms that predate it: the lane's concurrency).
   */
  slots: z.number().int().min(1).max(1_000).optional(),
  /**
   * Set when `slots` comes from an earlier swarm's lanes (StartSwarmInput.lanePrior): their calls'
   * mean latency, ms. The lane then runs on its header gate's slots until its first headers arrive,
   * and sizes itself on their time against this latency (src/core/lane-sizing.ts, toUntimedLaneSlots).
   */
  latency_ms: z.number().positive().max(3_600_000).optional(),
  /**
   * The swarm's root span (W3C traceparent) when the room traces it: the lane's spans join the
   * swarm's trace across the queue hop. Read leniently: a bad value only means no trace.
   */
  traceparent: z.string().max(128).optional(),
});
export type Ticket = z.infer<typeof TicketSchema>;

/**
 * A task packet of the earlier dispatch (v1, task ids in the message), still read as a ticket so
 * messages sent before an upgrade bring a lane instead of going to the dead-letter queue.
 */
const LegacyPacketSchema = z.strictObject({
  v: z.literal(1),
  swarm_id: z.string().min(1).max(64),
  task_ids: z.array(TaskIdSchema).min(1).max(100),
});

/** Reads a queue message body as a ticket; a v1 packet becomes a ticket named after its message. */
export function toTicket(body: unknown, messageId: string): { ok: true; value: Ticket } | { ok: false; issues: string[] } {
  const ticket = TicketSchema.safeParse(body);
  if (ticket.success) return { ok: true, value: ticket.data };
  const legacy = LegacyPacketSchema.safeParse(body);
  if (legacy.success) return { ok: true, value: { v: 2, swarm_id: legacy.data.swarm_id, ticket: `m:${messageId.slice(0, 60)}` } };
  return { ok: false, issues: ticket.error.issues.slice(0, 5).map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`) };
}

/** `sendBatch` takes at most 100 messages (and 256 KB, far above 100 tickets). */
export const SEND_BATCH_MAX_MESSAGES = 100;

/** Splits tickets into `sendBatch` calls. */
export function toSendBatches<T>(messages: readonly T[]): T[][] {
  const batches: T[][] = [];
  for (let i = 0; i < messages.length; i += SEND_BATCH_MAX_MESSAGES) batches.push(messages.slice(i, i + SEND_BATCH_MAX_MESSAGES));
  return batches;
}
