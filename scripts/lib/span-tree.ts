// Prints a trace as `npm run otel-dev` shows it: each span under its parent, with its latency and,
// for model calls, tokens and cost; a summary line of the swarm's chat spans. Pure (no I/O).
import type { TraceSpan } from "../../src/core/trace-span.ts";

/** A span as a receiver got it, with the service that sent it. */
export type ReceivedSpan = TraceSpan & { service: string };

/** The swarm's chat spans summed: what its ledger should say (calls less estimated ones, tokens). */
export interface ChatTotals {
  calls: number;
  failed: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

export function sumChatSpans(spans: readonly TraceSpan[]): ChatTotals {
  const totals: ChatTotals = { calls: 0, failed: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 };
  for (const span of spans) {
    if (span.attributes["gen_ai.operation.name"] !== "chat") continue;
    totals.calls += 1;
    if (span.status.code === 2) totals.failed += 1;
    totals.inputTokens += toNumber(span.attributes["gen_ai.usage.input_tokens"]);
    totals.outputTokens += toNumber(span.attributes["gen_ai.usage.output_tokens"]);
    totals.costUsd += toNumber(span.attributes["gen_ai.usage.cost"]);
  }
  return totals;
}

const toNumber = (value: unknown): number => (typeof value === "number" ? value : 0);

/** At most this many children are printed under one span; the rest are counted. */
const CHILDREN_SHOWN = 20;

/** The trace as an indented tree (spans whose parent never arrived are printed at the top). */
export function formatSpanTree(spans: readonly ReceivedSpan[], options: { childrenShown?: number } = {}): string {
  const shown = options.childrenShown ?? CHILDREN_SHOWN;
  const ids = new Set(spans.map((span) => span.spanId));
  const children = new Map<string, ReceivedSpan[]>();
  const tops: ReceivedSpan[] = [];
  for (const span of spans) {
    if (span.parentSpanId !== null && ids.has(span.parentSpanId)) {
      const list = children.get(span.parentSpanId) ?? [];
      list.push(span);
      children.set(span.parentSpanId, list);
    } else tops.push(span);
  }
  const lines: string[] = [];
  const walk = (span: ReceivedSpan, depth: number): void => {
    lines.push(`${"  ".repeat(depth)}${describeSpan(span)}`);
    const kids = (children.get(span.spanId) ?? []).sort((a, b) => a.startMs - b.startMs);
    for (const kid of kids.slice(0, shown)) walk(kid, depth + 1);
    if (kids.length > shown) lines.push(`${"  ".repeat(depth + 1)}… ${kids.length - shown} more`);
  };
  for (const top of tops.sort((a, b) => Number(a.parentSpanId !== null) - Number(b.parentSpanId !== null) || a.startMs - b.startMs)) walk(top, 0);
  const totals = sumChatSpans(spans);
  lines.push(
    `chat spans: ${totals.calls} (${totals.failed} failed) · tokens in ${totals.inputTokens} out ${totals.outputTokens} · cost $${totals.costUsd.toFixed(6)}`,
  );
  return lines.join("\n");
}

function describeSpan(span: ReceivedSpan): string {
  const a = span.attributes;
  const parts = [span.name, `${Math.round(span.endMs - span.startMs)} ms`];
  if (a["gen_ai.operation.name"] === "chat") {
    if (typeof a["gen_ai.usage.input_tokens"] === "number") parts.push(`tokens ${a["gen_ai.usage.input_tokens"]}→${a["gen_ai.usage.output_tokens"] ?? 0}`);
    if (typeof a["gen_ai.usage.cost"] === "number") parts.push(`$${a["gen_ai.usage.cost"].toFixed(6)}`);
  }
  if (span.parentSpanId === null && typeof a["gen_ai.usage.cost"] === "number") parts.push(`$${a["gen_ai.usage.cost"].toFixed(6)}`);
  if (typeof a["error.type"] === "string") parts.push(`error ${a["error.type"]}`);
  if (span.links !== undefined && span.links.length > 0) parts.push("(retry of an earlier attempt)");
  parts.push(`[${span.service}]`);
  return parts.join(" · ");
}
