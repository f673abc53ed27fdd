// A batch's output and error files as numbered part objects, written while its swarm runs: their
// keys, the code of a line that did not succeed, and which byte spans of the input to read for the
// custom_id of a page of error lines. No I/O.
import type { ErrorClass } from "./error-class.ts";
import type { TaskState } from "./swarm-contract.ts";

/** The swarm metadata key that names the batch a swarm runs (core/batch-request.ts, toBatchSpec). */
export const BATCH_ID_KEY = "edgeswarm.batch_id";

export const BATCH_PART_KINDS = ["output", "error"] as const;
export type BatchPartKind = (typeof BATCH_PART_KINDS)[number];

/** How a cancelled line's error reads: the user cancelled, or the completion window ran out. */
export type BatchCancelCode = "batch_cancelled" | "batch_expired";

/** Where a batch swarm's parts of one file live in FILES_BUCKET: tenant first, as every file key. */
export function toBatchFilePrefix(tenant: string, swarmId: string, kind: BatchPartKind): string {
  return `batch-parts/${tenant}/${swarmId}/${kind}`;
}

/** Part `part` (1-based) of a file: zero-padded, so a listing sorts in part order too. */
export function toBatchPartKey(filePrefix: string, part: number): string {
  return `${filePrefix}/${String(part).padStart(6, "0")}`;
}

/** The keys of a file's parts, in order. */
export function toBatchPartKeys(parts: { prefix: string; count: number }): string[] {
  return Array.from({ length: parts.count }, (_, i) => toBatchPartKey(parts.prefix, i + 1));
}

/** Why a line that did not succeed ended, as its error line's code. */
export function toLineErrorCode(state: TaskState, errorClass: ErrorClass | null, cancelCode: BatchCancelCode): string {
  switch (state) {
    case "cancelled":
      return cancelCode;
    case "skipped_budget":
      return "budget_exceeded";
    default:
      return errorClass ?? "internal";
  }
}

export interface ByteSpan {
  offset: number;
  length: number;
}

/** One read of the input that covers some lines: `members` index the ranges given, in offset order. */
export interface ReadSpan extends ByteSpan {
  members: number[];
}

/**
 * Groups line ranges into few reads: neighbours closer than `maxGap` bytes share one, up to
 * `maxSpan` bytes (a cancelled batch's tail is a handful of reads, not one per line; a lone
 * failure is its own small read).
 */
export function toReadSpans(ranges: readonly ByteSpan[], limits: { maxGap: number; maxSpan: number }): ReadSpan[] {
  const order = ranges.map((range, index) => ({ range, index })).sort((a, b) => a.range.offset - b.range.offset);
  const spans: ReadSpan[] = [];
  let current: ReadSpan | null = null;
  for (const { range, index } of order) {
    const end = range.offset + range.length;
    if (current !== null) {
      const gap = range.offset - (current.offset + current.length);
      const merged = Math.max(end, current.offset + current.length) - current.offset;
      if (gap <= limits.maxGap && merged <= limits.maxSpan) {
        current.length = merged;
        current.members.push(index);
        continue;
      }
    }
    current = { offset: range.offset, length: range.length, members: [index] };
    spans.push(current);
  }
  return spans;
}

/** A line's custom_id; "" when it has none (the file was checked when the batch was created). */
export function readCustomId(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null && "custom_id" in parsed && typeof parsed.custom_id === "string") return parsed.custom_id;
  } catch {
    // Checked when the batch was created: it parses.
  }
  return "";
}
