import { describe, expect, it } from "vitest";
import { findIllFormedString } from "./well-formed-json.ts";

describe("findIllFormedString", () => {
  it.each([
    ["plain text", { name: "review", tasks: [{ prompt: "Audit." }] }, null],
    ["a paired surrogate (an emoji)", { name: "ok \ud83d\ude00" }, null],
    ["CJK and accents", ["日本語", "é"], null],
    ["a lone high surrogate", { name: "\ud800" }, "name"],
    ["a lone low surrogate deep inside", { tasks: [{ prompt: "ok" }, { prompt: "x\udfffy" }] }, "tasks.1.prompt"],
    ["a reversed pair", { a: "\udc00\ud800" }, "a"],
    ["a lone surrogate in a key", { metadata: { "\ud800": 1 } }, "metadata.\ud800"],
    ["a bare string", "\ud800", "(root)"],
    ["numbers and nulls", [1, null, true, { a: 2 }], null],
  ])("%s", (_, value, expected) => {
    expect(findIllFormedString(value)).toBe(expected);
  });
});
