// Reads a batch's input file from R2 as it streams, line by line, and checks every line (src/core/
// batch-line.ts): the lines to run (their byte ranges and models), or the errors that fail the batch.
import { checkBatchLine, MAX_BATCH_ERRORS, MAX_BATCH_LINES, type BatchLineError, type LineRules } from "../../src/core/batch-line.ts";
import { splitLines } from "../../src/core/split-lines.ts";

export interface CheckedBatchLine {
  line: number;
  offset: number;
  length: number;
  model: string;
  maxTokens: number | null;
}

export type BatchFileCheck = { ok: true; lines: CheckedBatchLine[] } | { ok: false; errors: BatchLineError[] };

export async function checkBatchFile(chunks: AsyncIterable<Uint8Array>, rules: LineRules): Promise<BatchFileCheck> {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  const seen = new Set<string>();
  const lines: CheckedBatchLine[] = [];
  const errors: BatchLineError[] = [];
  let requests = 0;
  for await (const { line, offset, bytes } of splitLines(chunks)) {
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      errors.push({ code: "invalid_json_line", message: `line ${line} is not UTF-8`, line, param: null });
      continue;
    }
    // Blank lines (a trailing newline, an empty line between requests) hold no request.
    if (text.trim() === "") continue;
    requests += 1;
    if (requests > MAX_BATCH_LINES) {
      errors.push({ code: "too_many_requests", message: `the file holds more than ${MAX_BATCH_LINES} requests`, line, param: null });
      break;
    }
    const checked = checkBatchLine(text, line, rules, seen);
    if (!checked.ok) {
      if (errors.length < MAX_BATCH_ERRORS) errors.push(checked.error);
      continue;
    }
    if (errors.length === 0) lines.push({ line, offset, length: bytes.byteLength, model: checked.value.model, maxTokens: checked.value.maxTokens });
  }
  if (errors.length === 0 && lines.length === 0) errors.push({ code: "empty_file", message: "the file holds no request", line: 1, param: null });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, lines };
}
