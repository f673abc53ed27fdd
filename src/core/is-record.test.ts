import { describe, expect, it } from "vitest";
import { isRecord } from "./is-record.ts";

describe("isRecord", () => {
  it.each([
    ["an object", { a: 1 }, true],
    ["an empty object", {}, true],
    ["null", null, false],
    ["an array", [1, 2], false],
    ["a string", "x", false],
    ["a number", 1, false],
    ["undefined", undefined, false],
  ])("%s → %s", (_label, value, expected) => {
    expect(isRecord(value)).toBe(expected);
  });
});
