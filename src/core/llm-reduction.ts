// The `llm` reducer's maths and prompts: a reducer model merges the results, in groups cut to its
// context window and then the groups' summaries, level by level, until one answer is left. No I/O.
import { estimatePromptTokens } from "./estimate-swarm.ts";

/** First line of the reducer's system message (the mock model recognises reducer calls by it). */
export const REDUCER_MARKER = "[edgeswarm:reducer]";
/** Kept free of the reducer's context: the token estimate is an approximation. */
const SAFETY_MARGIN = 0.05;
const TRUNCATION_NOTE = "\n[… truncated to fit the reducer's context]";
const ITEM_SEPARATOR = "\n\n";
/** Room for up to 8 more digits on the `items: N` line than the estimate of `items: 0` has. */
const COUNT_DIGITS_TOKENS = 2;

export interface ReduceItem {
  id: string;
  text: string;
}

/** One level of a hierarchical reduction: level 1 reduces the task results, level 2 the outputs of level 1, … */
export interface ReductionLevel {
  level: number;
  /** Items reduced at this level. */
  inputs: number;
  /** Reducer calls of this level (its chunks). */
  tasks: number;
  /** Of those, the ones that failed (their chunks are left out of the next level). */
  failed: number;
}

/** Tokens left for the items of one reducer call: context − output − fixed prompt − 5% of context; at least 1. */
export function reducerInputBudget(contextTokens: number, maxOutputTokens: number, fixedPromptTokens: number): number {
  return Math.max(1, Math.floor(contextTokens - maxOutputTokens - fixedPromptTokens - Math.ceil(contextTokens * SAFETY_MARGIN)));
}

/**
 * Cuts the items into consecutive groups, in order, each within `budgetTokens`. Every group holds
 * at least 2 items, but for a last group left with a single item, so each level leaves at most
 * ceil(n / 2) items and the reduction ends. To make that possible an item is cut to half the
 * budget (its id listed in `truncated`). A budget below two empty items is exceeded rather than
 * left without progress.
 */
export function chunkForContext(items: readonly ReduceItem[], budgetTokens: number): { chunks: ReduceItem[][]; truncated: string[] } {
  const half = Math.floor(budgetTokens / 2);
  const truncated: string[] = [];
  const sized = items.map((item) => {
    if (itemTokens(item) <= half) return { item, tokens: itemTokens(item) };
    truncated.push(item.id);
    const cut = { id: item.id, text: truncateText(item.text, maxTextChars(item.id, half)) };
    return { item: cut, tokens: itemTokens(cut) };
  });

  const chunks: { items: ReduceItem[]; tokens: number }[] = [];
  let current: { items: ReduceItem[]; tokens: number } | null = null;
  for (const { item, tokens } of sized) {
    // A group of one always takes a second item: both are within half the budget.
    if (current === null || (current.tokens + tokens > budgetTokens && current.items.length >= 2)) {
      current = { items: [], tokens: 0 };
      chunks.push(current);
    }
    current.items.push(item);
    current.tokens += tokens;
  }
  // A last item left alone joins it with the previous group's last item when that group keeps two.
  const last = chunks[chunks.length - 1];
  const previous = chunks[chunks.length - 2];
  if (last !== undefined && previous !== undefined && last.items.length === 1 && previous.items.length >= 3) {
    const moved = previous.items.pop();
    if (moved !== undefined) last.items.unshift(moved);
  }
  return { chunks: chunks.map((chunk) => chunk.items), truncated };
}

export interface ReducerRequestInput {
  instructions: string | null;
  goal: string | null;
  items: readonly ReduceItem[];
  /** 1: the items are task results; 2 and up: summaries of an earlier level. */
  level: number;
  /** The last call: its answer is the swarm's answer. */
  final: boolean;
}

export function toReducerRequest(input: ReducerRequestInput): { system: string; prompt: string } {
  const system = [
    REDUCER_MARKER,
    "You merge the results of parallel sub-agents into one answer.",
    'Each result is a <result id="…"> block; the items: line says how many there are.',
    ...(input.level > 1 ? ["These results are themselves merged summaries of earlier groups of results."] : []),
    input.final
      ? "Produce the final answer for the user: combine the results, remove repetition, and say where they disagree."
      : "Produce a merged intermediate summary that keeps every distinct finding; it will be merged again with others.",
    ...(hasText(input.instructions)
      ? ["", input.final ? "Instructions from the user:" : "The user's instructions for the final answer (keep what it will need):", input.instructions.trim()]
      : []),
  ].join("\n");
  const prompt = [...(hasText(input.goal) ? [`Goal:\n${input.goal.trim()}`] : []), `items: ${input.items.length}`, ...input.items.map(toResultBlock)].join(
    ITEM_SEPARATOR,
  );
  return { system, prompt };
}

/**
 * The token estimate of a reducer call's system and prompt without its items, the larger of every
 * variant (level, final), for `reducerInputBudget`.
 */
export function fixedReducerPromptTokens(instructions: string | null, goal: string | null): number {
  let most = 0;
  for (const level of [1, 2]) {
    for (const final of [false, true]) {
      const { system, prompt } = toReducerRequest({ instructions, goal, items: [], level, final });
      most = Math.max(most, estimatePromptTokens(system, prompt) + COUNT_DIGITS_TOKENS);
    }
  }
  return most;
}

const toResultBlock = (item: ReduceItem): string => `<result id="${item.id}">\n${item.text}\n</result>`;

/** An item's share of the prompt: its text as estimated alone, plus its wrapper and separator. */
function itemTokens(item: ReduceItem): number {
  return estimatePromptTokens(null, item.text) + wrapperTokens(item.id);
}

function wrapperTokens(id: string): number {
  return Math.ceil((toResultBlock({ id, text: "" }).length + ITEM_SEPARATOR.length) / 4);
}

/** The most characters of text an item may keep, the note included, to stay within `tokens`. */
function maxTextChars(id: string, tokens: number): number {
  return Math.max(0, 4 * (tokens - wrapperTokens(id) - estimatePromptTokens(null, "")));
}

function truncateText(text: string, maxChars: number): string {
  if (maxChars <= TRUNCATION_NOTE.length) return "";
  let end = maxChars - TRUNCATION_NOTE.length;
  // Not between the two halves of a surrogate pair.
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return text.slice(0, end) + TRUNCATION_NOTE;
}

function hasText(text: string | null): text is string {
  return text !== null && text.trim() !== "";
}
