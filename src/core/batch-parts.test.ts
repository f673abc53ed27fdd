import { describe, expect, it } from "vitest";
import { readCustomId, toBatchFilePrefix, toBatchPartKey, toBatchPartKeys, toLineErrorCode, toReadSpans } from "./batch-parts.ts";

describe("batch part keys", () => {
  it("puts the tenant first and pads the part number so keys sort in part order", () => {
    const prefix = toBatchFilePrefix("tn_1", "sw_2", "output");
    expect(prefix).toBe("batch-parts/tn_1/sw_2/output");
    expect(toBatchPartKey(prefix, 7)).toBe("batch-parts/tn_1/sw_2/output/000007");
    const error = toBatchFilePrefix("tn_1", "sw_2", "error");
    expect(toBatchPartKeys({ prefix: error, count: 3 })).toEqual([1, 2, 3].map((n) => `batch-parts/tn_1/sw_2/error/00000${n}`));
    expect(toBatchPartKeys({ prefix: error, count: 0 })).toEqual([]);
  });
});

describe("toLineErrorCode", () => {
  it.each([
    ["cancelled", null, "batch_cancelled", "batch_cancelled"],
    ["cancelled", null, "batch_expired", "batch_expired"],
    ["skipped_budget", null, "batch_cancelled", "budget_exceeded"],
    ["failed", "rate_limited", "batch_cancelled", "rate_limited"],
    ["skipped", "auth", "batch_expired", "auth"],
    ["failed", null, "batch_cancelled", "internal"],
  ] as const)("%s (%s) with %s reads %s", (state, errorClass, cancelCode, code) => {
    expect(toLineErrorCode(state, errorClass, cancelCode)).toBe(code);
  });
});

describe("toReadSpans", () => {
  const limits = { maxGap: 10, maxSpan: 100 };
  it.each([
    { name: "nothing", ranges: [], spans: [] },
    { name: "one line", ranges: [{ offset: 5, length: 3 }], spans: [{ offset: 5, length: 3, members: [0] }] },
    {
      name: "neighbours share a read, in offset order whatever the input order",
      ranges: [
        { offset: 20, length: 5 },
        { offset: 0, length: 10 },
        { offset: 12, length: 4 },
      ],
      spans: [{ offset: 0, length: 25, members: [1, 2, 0] }],
    },
    {
      name: "a gap past maxGap starts a new read",
      ranges: [
        { offset: 0, length: 10 },
        { offset: 21, length: 4 },
      ],
      spans: [
        { offset: 0, length: 10, members: [0] },
        { offset: 21, length: 4, members: [1] },
      ],
    },
    {
      name: "a read stops before maxSpan",
      ranges: [
        { offset: 0, length: 60 },
        { offset: 60, length: 60 },
      ],
      spans: [
        { offset: 0, length: 60, members: [0] },
        { offset: 60, length: 60, members: [1] },
      ],
    },
  ])("$name", ({ ranges, spans }) => {
    expect(toReadSpans(ranges, limits)).toEqual(spans);
  });
});

describe("readCustomId", () => {
  it.each([
    ['{"custom_id":"a-1","method":"POST"}', "a-1"],
    ['{"custom_id":7}', ""],
    ["not json", ""],
    ["null", ""],
  ])("%s → %j", (text, id) => {
    expect(readCustomId(text)).toBe(id);
  });
});
