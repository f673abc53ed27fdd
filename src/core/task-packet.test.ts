import { describe, expect, it } from "vitest";
import { MAX_TASKS_PER_PACKET, TaskPacketSchema, toPackets } from "./task-packet.ts";

const ids = (n: number): string[] => Array.from({ length: n }, (_, i) => `t${i}`);

describe("toPackets", () => {
  it.each([
    // task count, requested size, expected packet sizes
    [0, 10, []],
    [1, 10, [1]],
    [10, 10, [10]],
    [11, 10, [10, 1]],
    [25, 10, [10, 10, 5]],
    [5, 1, [1, 1, 1, 1, 1]],
    [3, 0, [1, 1, 1]], // size below 1 counts as 1
    [3, -4, [1, 1, 1]],
    [5, 2.7, [2, 2, 1]],
    [250, 1_000, [100, 100, 50]], // never above MAX_TASKS_PER_PACKET
  ])("%i tasks, size %d → %j", (count, size, sizes) => {
    expect(toPackets("sw_x", ids(count), size).map((packet) => packet.task_ids.length)).toEqual(sizes);
  });

  it("keeps every id once, in order, with the swarm id and version", () => {
    const taskIds = ids(23);
    const packets = toPackets("sw_abc", taskIds, 5);
    expect(packets.flatMap((packet) => packet.task_ids)).toEqual(taskIds);
    for (const packet of packets) {
      expect(packet.v).toBe(1);
      expect(packet.swarm_id).toBe("sw_abc");
      expect(TaskPacketSchema.safeParse(packet).success).toBe(true);
    }
  });

  it("stays far below the 128 KB queue limit at the largest packet", () => {
    const [packet] = toPackets("sw_abcdefghijklmnopqrst", Array.from({ length: 100 }, (_, i) => `${"x".repeat(190)}${i}`), 100);
    expect(JSON.stringify(packet).length).toBeLessThan(128 * 1024); // ASCII: characters = bytes
  });
});

describe("TaskPacketSchema", () => {
  const valid = { v: 1, swarm_id: "sw_abc", task_ids: ["t1", "t2"] };
  it.each<[string, unknown, boolean]>([
    ["valid", valid, true],
    ["100 ids", { ...valid, task_ids: ids(MAX_TASKS_PER_PACKET) }, true],
    ["101 ids", { ...valid, task_ids: ids(MAX_TASKS_PER_PACKET + 1) }, false],
    ["no ids", { ...valid, task_ids: [] }, false],
    ["version 2", { ...valid, v: 2 }, false],
    ["no version", { swarm_id: "sw_abc", task_ids: ["t1"] }, false],
    ["empty swarm id", { ...valid, swarm_id: "" }, false],
    ["swarm id of 65 chars", { ...valid, swarm_id: "s".repeat(65) }, false],
    ["task id with a colon", { ...valid, task_ids: ["a:b"] }, false],
    ["task id with a space", { ...valid, task_ids: ["a b"] }, false],
    ["extra key", { ...valid, prompt: "leak" }, false],
    ["not an object", "sw_abc", false],
  ])("%s → %s", (_name, input, accepted) => {
    expect(TaskPacketSchema.safeParse(input).success).toBe(accepted);
  });
});
