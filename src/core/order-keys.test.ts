import { describe, expect, it } from "vitest";
import { orderKeys } from "./order-keys.ts";

const KEYS = ["k1", "k2", "k3"];

describe("orderKeys", () => {
  it("returns every key once, as a rotation of the configured order", () => {
    for (let i = 0; i < 50; i += 1) {
      const order = orderKeys(KEYS, "sw_a", `t${i}`, 1);
      expect([...order].sort()).toEqual(KEYS);
      const start = KEYS.indexOf(order[0] ?? "");
      expect(order).toEqual([...KEYS.slice(start), ...KEYS.slice(0, start)]);
    }
  });

  it("is deterministic in (swarm, task, attempt)", () => {
    expect(orderKeys(KEYS, "sw_a", "t7", 2)).toEqual(orderKeys(KEYS, "sw_a", "t7", 2));
  });

  it("starts a retry on the next key", () => {
    const first = orderKeys(KEYS, "sw_a", "t7", 1);
    expect(orderKeys(KEYS, "sw_a", "t7", 2)).toEqual([...first.slice(1), ...first.slice(0, 1)]);
    expect(orderKeys(KEYS, "sw_a", "t7", 4)).toEqual(first);
  });

  it("spreads 3,000 tasks evenly over the first key asked (±5%)", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 3_000; i += 1) {
      const first = orderKeys(KEYS, "sw_spread", `task-${i + 1}`, 1)[0] ?? "";
      counts.set(first, (counts.get(first) ?? 0) + 1);
    }
    for (const key of KEYS) expect(Math.abs((counts.get(key) ?? 0) / 3_000 - 1 / 3)).toBeLessThanOrEqual(0.05);
  });

  it("handles one key, no keys and an odd attempt number", () => {
    expect(orderKeys(["only"], "sw_a", "t1", 3)).toEqual(["only"]);
    expect(orderKeys([], "sw_a", "t1", 1)).toEqual([]);
    expect([...orderKeys(KEYS, "sw_a", "t1", 0)].sort()).toEqual(KEYS);
    expect([...orderKeys(KEYS, "sw_a", "t1", Number.NaN)].sort()).toEqual(KEYS);
  });
});
