// Records Linux `perf` samples of running processes (their native stacks, user space) until
// stopped, and hands back `perf script`'s text for perf-breakdown.ts. Needs the `perf` binary
// (Debian: linux-perf) and kernel.perf_event_paranoid ≤ 2 for one's own processes; when either is
// missing, `start` says why instead of throwing.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";

export interface PerfRecording {
  /** Stops the sampling and returns `perf script -F comm,pid,tid,ip,sym` of what it sampled. */
  stop(): Promise<string>;
}

/** 999 Hz: off the timer ticks' beat, and about 1,000 samples per second of CPU. */
const FREQUENCY_HZ = 999;

export function startPerfRecord(pids: readonly number[], dir: string): { ok: true; recording: PerfRecording } | { ok: false; why: string } {
  if (pids.length === 0) return { ok: false, why: "no process to sample" };
  const probe = spawnSync("perf", ["--version"], { encoding: "utf8" });
  if (probe.error !== undefined || probe.status !== 0) return { ok: false, why: "the perf binary was not found (Debian: apt install linux-perf)" };
  mkdirSync(dir, { recursive: true });
  const data = path.join(dir, "perf.data");
  rmSync(data, { force: true });
  const child = spawn("perf", ["record", "-F", String(FREQUENCY_HZ), "-g", "-p", pids.join(","), "-o", data], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    ok: true,
    recording: {
      async stop() {
        // perf writes its data file on SIGINT, as on Ctrl-C.
        child.kill("SIGINT");
        const code = await exited;
        if (code !== 0 && code !== null) throw new Error(`perf record exited ${code}: ${stderr.trim()}`);
        const script = spawnSync("perf", ["script", "-i", data, "-F", "comm,pid,tid,ip,sym"], { encoding: "utf8", maxBuffer: 1 << 30 });
        if (script.status !== 0) throw new Error(`perf script exited ${script.status}: ${script.stderr.trim().slice(-2_000)}`);
        return script.stdout;
      },
    },
  };
}
