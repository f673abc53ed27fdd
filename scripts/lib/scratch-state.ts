// Where a benchmark's throwaway local state goes (the SwarmRooms' and D1's SQLite files): on a
// tmpfs when the machine has one. Locally, workerd commits every Durable Object and D1 transaction
// with an fsync of its SQLite WAL, on the one thread that runs every Worker and Durable Object, so
// each commit stalls the whole stack for as long as the disk takes: at 10,000 tasks, W = 1,000 that
// was about a fifth of the swarm's wall on this project's machine (docs/benchmarks.md). In
// production a Durable Object's writes are made durable by its storage relay, which streams the WAL
// to followers while the output gate holds the object's answers (blog.cloudflare.com/sqlite-in-
// durable-objects), and every object and invocation has a thread of its own: a bench run on this
// machine's disk would measure the disk. `npm start` keeps its state where wrangler keeps it: that
// state is meant to last.
import { readFileSync } from "node:fs";
import path from "node:path";

/** The tmpfs directory to use, from /proc/mounts' text: `/dev/shm` when it is a tmpfs; null otherwise. */
export function tmpfsDirOf(mounts: string): string | null {
  for (const line of mounts.split("\n")) {
    const [, mountPoint, type] = line.split(/\s+/);
    if (mountPoint === "/dev/shm" && type === "tmpfs") return "/dev/shm";
  }
  return null;
}

/**
 * A fresh directory path for a run named `name`: under the machine's tmpfs (one per process, so
 * runs side by side never share one), else `fallback`. The caller wipes it before and after.
 */
export function scratchStateDir(name: string, fallback: string): { dir: string; tmpfs: boolean } {
  let mounts = "";
  try {
    mounts = readFileSync("/proc/mounts", "utf8");
  } catch {
    // not Linux: no tmpfs known
  }
  const tmpfs = tmpfsDirOf(mounts);
  return tmpfs === null ? { dir: fallback, tmpfs: false } : { dir: path.join(tmpfs, `edgeswarm-${name}-${process.pid}`), tmpfs: true };
}
