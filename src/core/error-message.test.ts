import { describe, expect, it } from "vitest";
import { toErrorMessage } from "./error-message.ts";

describe("toErrorMessage", () => {
  it.each([
    ["an Error: its message", new Error("boom"), "boom"],
    ["a TypeError: its message, not its name", new TypeError("bad input"), "bad input"],
    ["a string thrown", "plain", "plain"],
    ["a number thrown", 42, "42"],
    ["undefined", undefined, "undefined"],
  ])("%s", (_label, thrown, expected) => {
    expect(toErrorMessage(thrown)).toBe(expected);
  });
});
