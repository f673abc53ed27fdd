import { describe, expect, it } from "vitest";
import { assignModel, toModelLabel, toModelMix } from "./route-model.ts";

describe("model routing", () => {
  const mix = toModelMix([
    { model: "deepseek-v3.2", weight: 60 },
    { model: "kimi-k2.5", weight: 30 },
    { model: "claude-sonnet-4.5", weight: 10 },
  ]);

  it.each(["sw_aaaaaaaaaaaaaaaaaaaa", "sw_bbbbbbbbbbbbbbbbbbbb", "sw_zz2345zz2345zz2345zz"])(
    "routes 10,000 task ids of swarm %s within ±3%% of the weights",
    (swarmId) => {
      const counts = new Map<string, number>();
      for (let i = 0; i < 10_000; i += 1) {
        const model = assignModel(mix, swarmId, `t${String(i + 1).padStart(5, "0")}`);
        counts.set(model, (counts.get(model) ?? 0) + 1);
      }
      expect(Math.abs((counts.get("deepseek-v3.2") ?? 0) / 10_000 - 0.6)).toBeLessThanOrEqual(0.03);
      expect(Math.abs((counts.get("kimi-k2.5") ?? 0) / 10_000 - 0.3)).toBeLessThanOrEqual(0.03);
      expect(Math.abs((counts.get("claude-sonnet-4.5") ?? 0) / 10_000 - 0.1)).toBeLessThanOrEqual(0.03);
    },
  );

  it("routes a rerun the same way, and another swarm differently", () => {
    const ids = Array.from({ length: 200 }, (_, i) => `file-${i}.py`);
    const first = ids.map((id) => assignModel(mix, "sw_one", id));
    expect(ids.map((id) => assignModel(mix, "sw_one", id))).toEqual(first);
    expect(ids.map((id) => assignModel(mix, "sw_two", id))).not.toEqual(first);
  });

  it.each([
    ["one name", "gpt-4.1", [{ model: "gpt-4.1", weight: 1 }], "gpt-4.1"],
    [
      "a mix that names a model twice",
      [
        { model: "a", weight: 1 },
        { model: "b", weight: 2 },
        { model: "a", weight: 3 },
      ],
      [
        { model: "a", weight: 4 },
        { model: "b", weight: 2 },
      ],
      "a:4,b:2",
    ],
  ] as const)("%s", (_label, choice, expectedMix, label) => {
    const input = typeof choice === "string" ? choice : choice.map((m) => ({ ...m }));
    expect(toModelMix(input)).toEqual(expectedMix);
    expect(toModelLabel(input)).toBe(label);
  });

  it("sends every task of a single-model swarm to that model", () => {
    expect(assignModel([{ model: "only", weight: 1 }], "sw_x", "t1")).toBe("only");
  });
});
