// Budget maths: the worst case a call can cost before it starts, what a finished call is charged
// against the budget, and whether the next call still fits. No I/O.
// A call reserves its worst case when its task enters the window and is charged its real cost when
// it is recorded, so committed = charged + reserved never exceeds the budget.
import { MAX_TOOL_RESULT_CHARS } from "./agent-limits.ts";
import type { ErrorClass } from "./error-class.ts";
import type { ModelPrice } from "./pricing.ts";
import { costOfUsage } from "./pricing.ts";
import type { BudgetCaps } from "./spec-schema.ts";
import type { Usage } from "./usage.ts";

export interface Amount {
  usd: number;
  tokens: number;
}

/** Chat framing tokens beyond the text (role markers, separators): generous for every vendor. */
const FRAMING_TOKENS = 16;

/**
 * The most a call can use: every prompt byte as a token (a byte-level BPE token is at least one
 * byte, so this bounds any tokenizer) plus framing, and the full `max_output_tokens`.
 */
export function worstCaseCall(promptBytes: number, maxOutputTokens: number, price: ModelPrice | null): Amount {
  const prompt = promptBytes + FRAMING_TOKENS;
  const usage: Usage = {
    prompt_tokens: prompt,
    cached_tokens: 0,
    completion_tokens: maxOutputTokens,
    reasoning_tokens: 0,
    total_tokens: prompt + maxOutputTokens,
  };
  // Without a price only a token budget can apply (a USD budget refuses unpriced models up front).
  return { usd: price === null ? 0 : costOfUsage(usage, price), tokens: usage.total_tokens };
}

/** What one turn may add to the next turn's prompt, in bytes, besides its answer: a tool result at its limit, 3 bytes a character. */
export const TURN_GROWTH_BYTES = MAX_TOOL_RESULT_CHARS * 3;

/**
 * The most one attempt of a multi-turn task can cost: `calls` calls, each prompt grown by the
 * turns before it (bounded by the last, largest one).
 */
export function worstCaseAttempt(promptBytes: number, maxOutputTokens: number, calls: number, price: ModelPrice | null): Amount {
  const last = worstCaseCall(promptBytes + (calls - 1) * (maxOutputTokens + TURN_GROWTH_BYTES), maxOutputTokens, price);
  return { usd: last.usd * calls, tokens: last.tokens * calls };
}

/** An upstream answers these with an HTTP error before generating anything: nothing is billed. */
export function isUnbilledError(errorClass: ErrorClass | null): boolean {
  switch (errorClass) {
    case "rate_limited":
    case "upstream_error":
    case "bad_request":
    case "auth":
    case "not_found":
    case "quota_exceeded":
    case "context_length":
      return true;
    default:
      return false;
  }
}

/**
 * What a recorded call counts against the budget: its real cost when the upstream reported usage;
 * nothing for an error the upstream answered before generating; otherwise (no usage, a timeout, a
 * cut stream) its worst case, since the upstream may have billed tokens we never saw.
 */
export function chargeOfCall(call: { usage: Usage | null; errorClass: ErrorClass | null }, price: ModelPrice | null, worstCase: Amount): Amount {
  if (call.usage !== null) return { usd: price === null ? worstCase.usd : costOfUsage(call.usage, price), tokens: call.usage.total_tokens };
  if (isUnbilledError(call.errorClass)) return { usd: 0, tokens: 0 };
  return worstCase;
}

/** Whether `next` fits on top of what is already committed (charged + reserved). */
export function fitsBudget(budget: BudgetCaps, committed: Amount, next: Amount): boolean {
  if (budget.max_usd !== undefined && committed.usd + next.usd > budget.max_usd + 1e-12) return false;
  if (budget.max_tokens !== undefined && committed.tokens + next.tokens > budget.max_tokens) return false;
  return true;
}

/** Why the budget stopped the swarm, for its status. */
export function toBudgetReason(budget: BudgetCaps, charged: Amount, next: Amount): string {
  const parts: string[] = [];
  if (budget.max_usd !== undefined) parts.push(`$${charged.usd.toFixed(6)} of $${budget.max_usd} spent, the next call may cost up to $${next.usd.toFixed(6)}`);
  if (budget.max_tokens !== undefined) parts.push(`${charged.tokens} of ${budget.max_tokens} tokens used, the next call may use up to ${next.tokens}`);
  return `budget exhausted: ${parts.join("; ")}`;
}
