// Finds strings in a parsed JSON value that are not well-formed Unicode: a lone surrogate (`"\ud800"`
// is valid JSON, but no UTF-8 can carry it, so D1, logs and the upstream would each mangle it
// differently). Keys count too. No I/O. Callers bound the depth first (json-depth.ts).
import { toIssuePath } from "./errors.ts";

// With the `u` flag a paired surrogate is one code point outside this class: only lone halves match.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** The path of the first string (or key) holding a lone surrogate, or null when every one is well formed. */
export function findIllFormedString(value: unknown, path: (string | number)[] = []): string | null {
  if (typeof value === "string") return LONE_SURROGATE.test(value) ? toIssuePath(path) : null;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findIllFormedString(item, [...path, i]);
      if (found !== null) return found;
    }
    return null;
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (LONE_SURROGATE.test(key)) return toIssuePath([...path, key]);
      const found = findIllFormedString(item, [...path, key]);
      if (found !== null) return found;
    }
  }
  return null;
}
