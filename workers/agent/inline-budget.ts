// Whether a consumer batch may still start another round of inline retries. Pure: the caller
// passes the clock readings. Rounds it refuses are not lost: their messages go back to the queue.

export interface InlineBudget {
  /** Inline rounds one swarm may run in a batch after its first round. */
  maxRounds: number;
  /** No inline round starts later than this after the batch began. */
  startWithinMs: number;
  /** Nor a round whose calls could, at their timeout, still run this long after the batch began. */
  endWithinMs: number;
}

/**
 * 10 rounds: more than any task can use (max_attempts ≤ 10, each round is one attempt).
 * 120 s: a short retry is worth keeping in the invocation while the batch is young; later, the
 * queue's delayed redelivery costs little and the invocation ends sooner.
 * 12 min: the consumer's wall time is 15 min; the rest is for recordResults (≤ 4 tries) and acks.
 */
export const DEFAULT_INLINE_BUDGET: InlineBudget = { maxRounds: 10, startWithinMs: 120_000, endWithinMs: 720_000 };

export interface InlineRoundPlan {
  /** 1 for the first inline round (the second claim of the swarm in this batch). */
  round: number;
  /** Epoch ms the round would claim (once the SwarmRoom's delay has passed). */
  startsAt: number;
  /** The longest its calls may take: waves × the tasks' per-call timeout. */
  callsMs: number;
}

export function allowsInlineRound(budget: InlineBudget, batchStartedAt: number, plan: InlineRoundPlan): boolean {
  const startsAfter = plan.startsAt - batchStartedAt;
  return plan.round <= budget.maxRounds && startsAfter <= budget.startWithinMs && startsAfter + plan.callsMs <= budget.endWithinMs;
}
