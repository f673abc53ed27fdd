// The SSE event plan for one streamed answer (normal, no_usage, truncated, malformed), as pure data.

import type { FaultKind } from "./faults.ts";
import { DONE_EVENT, chunkEvent } from "./openai.ts";
import type { Answer, ChatRequest, ChunkMeta } from "./openai.ts";
import { splitForStream } from "./text.ts";
import { streamToolCallDeltas } from "./tool-dialect.ts";
import type { UsageReport } from "./usage.ts";

/** Wire text to write, a usage marker (count tokens now: the chunk carrying usage follows), or how to end. */
export type StreamEvent = string | { usage: UsageReport } | { end: "done" | "destroy" };

/** Stream pieces: at least 16 chars, at most ~8 content chunks per answer (cheap at 1,000+ streams). */
const pieceSize = (text: string): number => Math.max(16, Math.ceil(text.length / 8));

/**
 * Role chunk, content (or tool-call delta) chunks in the answer's tool dialect, finish chunk, then — only with
 * stream_options.include_usage — a `choices: []` usage chunk, then `[DONE]`. Chunks carry
 * `usage: null` when usage was requested, like the OpenAI API. The `kimi` shape (Moonshot) instead
 * always puts the usage in `choices[0].usage` of the finish chunk, with no usage chunk and no
 * top-level `usage`. `truncated` stops halfway and drops the connection; `malformed` sends one
 * broken data line. Neither, nor `no_usage`, sends usage.
 */
export function streamPlan(r: ChatRequest, m: ChunkMeta, a: Answer, f: FaultKind | undefined, report: UsageReport): StreamEvent[] {
  const kimi = report.shape === "kimi";
  const withUsage = (kimi || r.include_usage) && f !== "no_usage" && f !== "truncated" && f !== "malformed";
  const u = withUsage && !kimi ? null : undefined;
  const out: StreamEvent[] = [];
  const body: string[] = [];
  if (a.tool_calls !== undefined) {
    // The first chunk carries the role and the first tool-call delta, as the OpenAI API does.
    const deltas = streamToolCallDeltas(a.dialect, a.tool_calls);
    out.push(chunkEvent(m, { role: "assistant", content: null, tool_calls: deltas[0] ?? [] }, null, u));
    for (const d of deltas.slice(1)) body.push(chunkEvent(m, { tool_calls: d }, null, u));
  } else {
    out.push(chunkEvent(m, { role: "assistant", content: "", refusal: null }, null, u));
    for (const piece of splitForStream(a.content ?? "", pieceSize(a.content ?? ""))) body.push(chunkEvent(m, { content: piece }, null, u));
  }
  if (f === "truncated") {
    out.push(...body.slice(0, Math.max(1, Math.floor(body.length / 2))), { end: "destroy" });
    return out;
  }
  if (f === "malformed") {
    const broken = chunkEvent(m, { content: a.content ?? "" }, null, u);
    out.push(`${broken.slice(0, Math.floor(broken.length / 2))}\n\n`, DONE_EVENT, { end: "done" });
    return out;
  }
  out.push(...body);
  if (withUsage && kimi) out.push({ usage: report }, chunkEvent(m, {}, a.finish_reason, undefined, report.wire));
  else {
    out.push(chunkEvent(m, {}, a.finish_reason, u));
    if (withUsage) out.push({ usage: report }, chunkEvent(m, null, null, report.wire));
  }
  out.push(DONE_EVENT, { end: "done" });
  return out;
}
