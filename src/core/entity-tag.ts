// Entity tags for conditional reads (RFC 9110 §8.8.3, §13.1.2): a weak tag made from a digest, and
// whether an If-None-Match header names it. No I/O.

import { toHex } from "./sha256.ts";

/** Bytes of the digest a tag keeps: 128 bits, where a collision would serve a stale body as fresh. */
const TAG_BYTES = 16;

/**
 * A weak entity tag, `W/"<32 hex digits>"`. Weak because what it stands for leaves out fields that
 * change without changing what the representation means (a swarm's billable meters count every
 * read, this one's too); RFC 9110 §8.8.1: a weak validator "might not change for every change to
 * the representation data".
 */
export function toWeakEntityTag(digest: Uint8Array): string {
  if (digest.length < TAG_BYTES) throw new RangeError(`an entity tag needs a digest of at least ${TAG_BYTES} bytes, got ${digest.length}`);
  return `W/"${toHex(digest.subarray(0, TAG_BYTES))}"`;
}

/** One entity-tag: optional `W/`, then a quoted opaque tag of etagc characters (no `"`, no space or controls). */
const ENTITY_TAG = /(?:W\/)?"([\x21\x23-\x7e\x80-\xff]*)"/y;

/**
 * The opaque tags of an If-None-Match list, weak or strong alike (`W/"a"` and `"a"` both give `a`);
 * null for `*`, [] when the header is malformed. Scanned tag by tag, not split at commas, since an
 * opaque tag may itself hold a comma; empty list elements are allowed (RFC 9110 §5.6.1).
 */
function parseIfNoneMatch(header: string): string[] | null {
  const value = header.trim();
  if (value === "*") return null;
  const tags: string[] = [];
  let at = 0;
  let afterTag = false;
  while (at < value.length) {
    const char = value[at];
    if (char === " " || char === "\t") {
      at += 1;
    } else if (char === ",") {
      at += 1;
      afterTag = false;
    } else {
      // Two tags need a comma between them.
      if (afterTag) return [];
      ENTITY_TAG.lastIndex = at;
      const match = ENTITY_TAG.exec(value);
      if (match === null) return [];
      tags.push(match[1] ?? "");
      at = ENTITY_TAG.lastIndex;
      afterTag = true;
    }
  }
  return tags;
}

/**
 * Whether `If-None-Match` names the current tag, so the answer is 304 Not Modified. RFC 9110
 * §13.1.2: the header is `*` or a list of entity-tags; it uses the weak comparison (`W/"a"` and
 * `"a"` match), and `*` matches any current representation. A malformed header matches nothing,
 * and the full answer goes out: a wrong guess about a broken header costs one body, never a stale one.
 */
export function ifNoneMatchHits(header: string | null, currentTag: string): boolean {
  if (header === null) return false;
  ENTITY_TAG.lastIndex = 0;
  const current = ENTITY_TAG.exec(currentTag);
  if (current === null || ENTITY_TAG.lastIndex !== currentTag.length) return false;
  const tags = parseIfNoneMatch(header);
  return tags === null || tags.includes(current[1] ?? "");
}
