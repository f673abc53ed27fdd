import { describe, expect, it } from "vitest";
import { tmpfsDirOf } from "./scratch-state.ts";

describe("the tmpfs a benchmark's state goes to", () => {
  it.each([
    ["/dev/shm mounted as tmpfs", "/dev/vda / ext4 rw 0 0\ntmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n", "/dev/shm"],
    ["/dev/shm on a disk", "/dev/vda / ext4 rw 0 0\n/dev/vdb /dev/shm ext4 rw 0 0\n", null],
    ["a tmpfs elsewhere only", "tmpfs /run tmpfs rw 0 0\n", null],
    ["no mounts known (not Linux)", "", null],
  ])("%s", (_, mounts, expected) => {
    expect(tmpfsDirOf(mounts)).toBe(expected);
  });
});
