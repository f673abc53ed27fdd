import { describe, expect, it } from "vitest";
import { findExcessJsonDepth, MAX_JSON_DEPTH } from "./json-depth.ts";

describe("findExcessJsonDepth", () => {
  it.each([
    ["a flat object", '{"a":1,"b":[1,2]}', 2, null],
    ["exactly the limit", "[[[]]]", 3, null],
    ["one past the limit", "[[[[]]]]", 3, 4],
    ["objects and arrays together", '{"a":{"b":[{"c":1}]}}', 3, 4],
    ["brackets inside strings", '{"a":"[[[[[[[[{{{{"}', 2, null],
    ["an escaped quote inside a string", '{"a":"\\"[[[[[["}', 2, null],
    ["an escaped backslash before the closing quote", '["\\\\",[[[]]]]', 3, 4],
    ["unbalanced closers never go below zero", "]]]][[", 1, 2],
    ["not JSON at all", "hello", 1, null],
  ])("%s", (_, text, max, expected) => {
    expect(findExcessJsonDepth(text, max)).toBe(expected);
  });

  it("refuses 100,000 nested arrays at the default limit without recursion", () => {
    expect(findExcessJsonDepth("[".repeat(100_000))).toBe(MAX_JSON_DEPTH + 1);
  });
});
