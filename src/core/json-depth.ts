// Bounds how deeply a JSON text nests, judged on the text before it is parsed: a body of 100,000
// `[` must be refused with a 400, not handed to JSON.parse and then to recursive validators. No I/O.

/** Deeper than any spec needs (a response_format schema included); deep enough to refuse abuse early. */
export const MAX_JSON_DEPTH = 64;

/**
 * The depth at which `text` first exceeds `max` (that is, `max + 1`), or null when it never does.
 * Brackets inside strings (escapes included) do not count; the text need not be valid JSON.
 */
export function findExcessJsonDepth(text: string, max: number = MAX_JSON_DEPTH): number | null {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
      continue;
    }
    if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      depth++;
      if (depth > max) return depth;
    } else if (ch === 0x5d || ch === 0x7d) depth = Math.max(0, depth - 1);
  }
  return null;
}
