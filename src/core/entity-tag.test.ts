import { describe, expect, it } from "vitest";
import { ifNoneMatchHits, toWeakEntityTag } from "./entity-tag.ts";

describe("toWeakEntityTag", () => {
  it("is W/ and the digest's first 16 bytes in lowercase hex", () => {
    const digest = Uint8Array.from({ length: 32 }, (_, i) => i * 7);
    expect(toWeakEntityTag(digest)).toBe('W/"00070e151c232a31383f464d545b6269"');
  });

  it("refuses a digest shorter than 16 bytes", () => {
    expect(() => toWeakEntityTag(new Uint8Array(8))).toThrow(/at least 16 bytes, got 8/);
  });
});

describe("ifNoneMatchHits (RFC 9110 §13.1.2, weak comparison)", () => {
  const tag = 'W/"abc123"';
  it.each<[string | null, boolean]>([
    [null, false],
    ["", false],
    ['W/"abc123"', true],
    ['"abc123"', true], // weak comparison: the strong form of the same opaque tag matches
    ['  W/"abc123"  ', true],
    ["*", true],
    [" * ", true],
    ['"other", W/"abc123"', true],
    ['W/"abc123","other"', true],
    ['"other" ,\tW/"abc123"', true],
    [', , W/"abc123" ,', true], // empty list elements are allowed
    ['"a,b", W/"abc123"', true], // an opaque tag may hold a comma
    ['"other"', false],
    ['W/"abc12"', false],
    ['W/"ABC123"', false], // opaque tags compare byte for byte
    ['w/"abc123"', false], // the weak prefix is case-sensitive
    ["abc123", false], // unquoted: malformed
    ['W/"abc123" W/"x"', false], // two tags without a comma: malformed, so no match
    ['"other", abc123', false],
    ['"abc123', false],
    ['"abc 123"', false],
    ['*, W/"abc123"', false], // `*` only stands alone
  ])("If-None-Match %j → %s", (header, expected) => {
    expect(ifNoneMatchHits(header, tag)).toBe(expected);
  });

  it("matches nothing when the current tag is itself malformed", () => {
    expect(ifNoneMatchHits("*", "abc")).toBe(false);
    expect(ifNoneMatchHits('"abc"', 'W/"abc" trailing')).toBe(false);
  });
});
