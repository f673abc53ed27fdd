import { describe, expect, it } from "vitest";
import { formatUsd } from "./format-usd.ts";

describe("formatUsd", () => {
  it.each([
    [0.016092, "$0.0161"],
    [0.0000175, "$0.0000175"],
    // A queue's share of 1,000 tasks: not "$8.00e-7".
    [8e-7, "$0.0000008"],
    [1234.5, "$1,230"],
    [null, "—"],
  ])("%s → %s", (n, shown) => {
    expect(formatUsd(n)).toBe(shown);
  });
});
