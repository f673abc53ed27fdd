import { describe, expect, it } from "vitest";
import { toExecutorHost } from "./executor-hosts.ts";

describe("executor hosts", () => {
  it.each([
    ["one host: always the first", "sw_a/t1", 1, 0],
    ["no hosts counts as one", "sw_a/t1", 0, 0],
    ["a fraction counts as its floor", "sw_a/t1", 1.9, 0],
  ])("%s", (_label, name, hosts, expected) => {
    expect(toExecutorHost(name, hosts)).toBe(expected);
  });

  it.each([2, 3, 4])("the same name lands on the same one of %i hosts, every time", (hosts) => {
    for (let i = 0; i < 50; i += 1) {
      const name = `sw_${i}/ticket.${i * 7}`;
      const host = toExecutorHost(name, hosts);
      expect(host).toBeGreaterThanOrEqual(0);
      expect(host).toBeLessThan(hosts);
      expect(toExecutorHost(name, hosts)).toBe(host);
    }
  });

  it.each([2, 3, 4])("a swarm's tickets spread evenly over %i hosts (each within 15% of its share of 2,000)", (hosts) => {
    const counts = new Array<number>(hosts).fill(0);
    for (let i = 0; i < 2_000; i += 1) {
      const host = toExecutorHost(`sw_cfszgbpg63k6vxbwhzh6/63k6vxbwhzh6.mx7pb${i.toString(36)}.5d83900f`, hosts);
      counts[host] = (counts[host] ?? 0) + 1;
    }
    for (const count of counts) expect(Math.abs(count - 2_000 / hosts)).toBeLessThan((0.15 * 2_000) / hosts);
  });
});
