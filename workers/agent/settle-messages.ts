// Turns what the SwarmRoom said about each task of a swarm into one ack or retry per message.
// A message is acked only when the SwarmRoom accounted for every one of its tasks.
import { backoffDelayMs, toQueueDelaySeconds } from "../../src/core/retry-policy.ts";
import type { PacketMessage } from "./group-packets.ts";

/**
 * settled: the claim refused it (done, leased, unknown, parked) or its outcome was recorded and
 * acked. retry: the SwarmRoom asked for a redelivery after `delaySeconds`. redeliver: its outcome
 * is unknown to the SwarmRoom (RPC failed, claim deferred, the run threw): redeliver after back-off.
 */
export type TaskFate = { kind: "settled" } | { kind: "retry"; delaySeconds: number } | { kind: "redeliver" };

export interface SettleCounts {
  acked: number;
  retried: number;
}

/**
 * Acks each message all of whose tasks are settled, and returns the rest untouched. Called after
 * every round, so a message is not held (nor redelivered after a crash) while other tasks of its
 * swarm retry inline.
 */
export function ackSettledMessages(messages: readonly PacketMessage[], fates: ReadonlyMap<string, TaskFate>, counts: SettleCounts): PacketMessage[] {
  const open: PacketMessage[] = [];
  for (const packet of messages) {
    if (packet.taskIds.every((taskId) => fates.get(taskId)?.kind === "settled")) {
      packet.message.ack();
      counts.acked += 1;
    } else {
      open.push(packet);
    }
  }
  return open;
}

/**
 * Settles every message once its swarm's rounds are over: acks it when all its tasks are settled,
 * otherwise retries it with the longest delay any of its tasks needs. A task without a fate counts
 * as redeliver, never as settled.
 */
export function settleMessages(messages: readonly PacketMessage[], fates: ReadonlyMap<string, TaskFate>, counts: SettleCounts): void {
  for (const { message, taskIds } of ackSettledMessages(messages, fates, counts)) {
    let delaySeconds = 0;
    for (const taskId of taskIds) {
      const fate = fates.get(taskId) ?? { kind: "redeliver" };
      if (fate.kind === "settled") continue;
      delaySeconds = Math.max(delaySeconds, fate.kind === "retry" ? fate.delaySeconds : redeliveryDelaySeconds(message));
    }
    message.retry({ delaySeconds });
    counts.retried += 1;
  }
}

/** Back-off by the queue's own delivery count, for a message the SwarmRoom gave no delay for. */
export function redeliveryDelaySeconds(message: Message<unknown>): number {
  return toQueueDelaySeconds(backoffDelayMs(message.attempts, null));
}
