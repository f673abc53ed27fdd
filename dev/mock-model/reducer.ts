// The reducer role: answers `[mock] reduced <count> results (<ids>): <digest>` for the
// `<result id="…">…</result>` blocks it is given. Deterministic, no I/O.

import { sha256hex, words } from "./text.ts";

/** Answers stay under this many chars (60 tokens at 4 chars each), so hierarchical reduction converges. */
export const REDUCER_MAX_CHARS = 240;
const ID_CHARS = 24;

export interface ResultBlock {
  id: string;
  body: string;
}

/** The `<result id="…">…</result>` blocks of `text`, in order. */
export function readResults(text: string): ResultBlock[] {
  const out: ResultBlock[] = [];
  for (const m of text.matchAll(/<result\s+id="([^"]*)"[^>]*>([\s\S]*?)<\/result>/g)) out.push({ id: m[1] ?? "", body: m[2] ?? "" });
  return out;
}

/** `[mock] reduced 12 results (t1, t2, t3, …): digest 1a2b3c4d alpha queue merge shard plan.` */
export function reducerAnswer(userText: string): string {
  const results = readResults(userText);
  const shown = results.slice(0, 3).map((r) => (r.id.length > ID_CHARS ? `${r.id.slice(0, ID_CHARS - 1)}…` : r.id));
  const ids = results.length > 3 ? `${shown.join(", ")}, …` : shown.join(", ");
  const hash = sha256hex(results.map((r) => `${r.id}\n${r.body}`).join("\n\u0000"));
  return `[mock] reduced ${results.length} results (${ids}): digest ${hash.slice(0, 8)} ${words(hash, 5)}.`.slice(0, REDUCER_MAX_CHARS);
}
