import { describe, expect, it } from "vitest";
import { PrefixCache, toCacheText, toPrefillSkippedMs, toPrefixBlocks } from "./prefix-cache.ts";

/** A text of `tokens` mock tokens (4 characters each), made of `fill`. */
const text = (tokens: number, fill = "a") => fill.repeat(tokens * 4);

describe("toPrefixBlocks", () => {
  it.each<[string, number, number[]]>([
    ["under 1,024 tokens: nothing is cached", 1_023, []],
    ["exactly 1,024: one block", 1_024, [1_024]],
    ["1,151: still one (128-token increments)", 1_151, [1_024]],
    ["1,152: two", 1_152, [1_024, 1_152]],
    ["2,000: the first 1,024, then every 128", 2_000, [1_024, 1_152, 1_280, 1_408, 1_536, 1_664, 1_792, 1_920]],
  ])("%s", (_label, tokens, expected) => {
    expect(toPrefixBlocks(text(tokens)).tokens).toEqual(expected);
  });

  it("gives the same hashes to the same prefix, whatever follows it", () => {
    const a = toPrefixBlocks(text(1_100) + text(200, "b"));
    const b = toPrefixBlocks(text(1_100) + text(300, "c"));
    // The prefixes up to 1,024 and 1,152 lie inside the shared 1,100 tokens only for the first.
    expect(a.hashes[0]).toBe(b.hashes[0]);
    expect(a.hashes[1]).not.toBe(b.hashes[1]);
  });
});

describe("PrefixCache", () => {
  const shared = text(1_500, "s");
  const taskA = toPrefixBlocks(`${shared}${text(100, "x")}`);
  const taskB = toPrefixBlocks(`${shared}${text(100, "y")}`);

  it("misses until a request with the prefix was processed, then hits the longest shared block", () => {
    const cache = new PrefixCache();
    // Two requests arrive before either is processed: both miss.
    expect(cache.lookup(taskA, 0)).toBe(0);
    expect(cache.lookup(taskB, 1)).toBe(0);
    // The first one's prefill is done.
    cache.store(taskA, 200);
    // Shared: 1,500 tokens → cached in 128-token blocks after the first 1,024: 1,408.
    expect(cache.lookup(taskB, 201)).toBe(1_408);
    // The same prompt again: its whole block-aligned length (1,600 tokens → 1,536).
    expect(cache.lookup(taskA, 202)).toBe(1_536);
  });

  it("never caches a prompt under 1,024 tokens", () => {
    const cache = new PrefixCache();
    const small = toPrefixBlocks(text(1_000));
    cache.store(small, 0);
    expect(cache.lookup(small, 1)).toBe(0);
  });

  it("a prefix that differs early shares nothing (per-task text before the shared part)", () => {
    const cache = new PrefixCache();
    cache.store(toPrefixBlocks(`task 1\n${shared}`), 0);
    expect(cache.lookup(toPrefixBlocks(`task 2\n${shared}`), 1)).toBe(0);
  });

  it("forgets a prefix unused for its ttl, and a use keeps it", () => {
    const cache = new PrefixCache({ ttlMs: 1_000 });
    cache.store(taskA, 0);
    expect(cache.lookup(taskB, 900)).toBe(1_408);
    expect(cache.lookup(taskB, 1_800)).toBe(1_408);
    expect(cache.lookup(taskB, 2_801)).toBe(0);
  });

  it("keeps at most maxEntries prefixes, dropping the least recently used", () => {
    const cache = new PrefixCache({ maxEntries: 2 });
    cache.store(toPrefixBlocks(text(1_024, "p")), 0);
    cache.store(toPrefixBlocks(text(1_024, "q")), 1);
    cache.store(toPrefixBlocks(text(1_024, "r")), 2);
    expect(cache.size()).toBe(2);
    expect(cache.lookup(toPrefixBlocks(text(1_024, "p")), 3)).toBe(0);
    expect(cache.lookup(toPrefixBlocks(text(1_024, "r")), 3)).toBe(1_024);
  });
});

describe("toPrefillSkippedMs", () => {
  it.each([
    // cached tokens, ms per 1,000, ttfb → skipped
    [0, 50, 498, 0],
    [1_920, 50, 498, 96],
    [1_920, 0, 498, 0],
    [1_920, 50, 60, 60],
    [1_920, 50, 0, 0],
    [1_024, 33, 498, 34],
  ])("%i cached tokens at %i ms per 1,000 with a ttfb of %i ms skip %i ms", (cached, msPer1k, ttfb, skipped) => {
    expect(toPrefillSkippedMs(cached, msPer1k, ttfb)).toBe(skipped);
  });
});

describe("toCacheText", () => {
  const system = { role: "system", content: "You review code." };
  const tools = [{ type: "function", function: { name: "lint" } }];

  it("puts tools and the response format before the messages, in order", () => {
    const t = toCacheText({ raw_tools: tools, response_format: { type: "json_object" }, messages: [system, { role: "user", content: "file 1" }] });
    expect(t.indexOf("lint")).toBeLessThan(t.indexOf("json_object"));
    expect(t.indexOf("json_object")).toBeLessThan(t.indexOf("You review code."));
    expect(t.indexOf("You review code.")).toBeLessThan(t.indexOf("file 1"));
  });

  it("two tasks' requests share the text up to their first own message", () => {
    const a = toCacheText({ raw_tools: tools, messages: [system, { role: "user", content: "file 1" }] });
    const b = toCacheText({ raw_tools: tools, messages: [system, { role: "user", content: "file 2" }] });
    const common = a.length - a.indexOf("file 1");
    expect(a.slice(0, a.length - common)).toBe(b.slice(0, b.length - common));
  });
});
