// Records Linux `perf` samples of running processes (their native stacks, user space) until
// stopped, and hands back `perf script`'s text for perf-breakdown.ts and perf-timeline.ts. Needs the
// `perf` binary (Debian: linux-perf) and kernel.perf_event_paranoid ≤ 2 for one's own processes;
// when either is missing, `start` says why instead of throwing.
//
// perf takes a few hundred ms to attach to a workerd's threads (about 400 ms on the 2-core machine:
// the first samples of a swarm came that long after its submit), so a recording started just before
// a swarm missed its start. It now attaches with its events off (`--delay -1`) and `start` resolves
// only once perf has acknowledged turning them on through its control FIFO (`--control
// fifo:ctl,ack`, perf-record(1)): every sample after that is in the data.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, constants, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { Socket } from "node:net";
import path from "node:path";

export interface PerfRecording {
  /** Stops the sampling and returns `perf script -F comm,pid,tid,time,ip,sym` of what it sampled. */
  stop(): Promise<string>;
}

/** 999 Hz: off the timer ticks' beat, and about 1,000 samples per second of CPU. */
const FREQUENCY_HZ = 999;
/** How long perf may take to attach and turn its events on before the recording is given up. */
const ENABLE_TIMEOUT_MS = 15_000;

export async function startPerfRecord(pids: readonly number[], dir: string): Promise<{ ok: true; recording: PerfRecording } | { ok: false; why: string }> {
  if (pids.length === 0) return { ok: false, why: "no process to sample" };
  const probe = spawnSync("perf", ["--version"], { encoding: "utf8" });
  if (probe.error !== undefined || probe.status !== 0) return { ok: false, why: "the perf binary was not found (Debian: apt install linux-perf)" };
  mkdirSync(dir, { recursive: true });
  const data = path.join(dir, "perf.data");
  const ctlPath = path.join(dir, "perf.ctl");
  const ackPath = path.join(dir, "perf.ack");
  for (const file of [data, ctlPath, ackPath]) rmSync(file, { force: true });
  for (const fifo of [ctlPath, ackPath]) {
    const made = spawnSync("mkfifo", [fifo], { encoding: "utf8" });
    if (made.error !== undefined || made.status !== 0) return { ok: false, why: `mkfifo ${fifo} failed: ${made.stderr?.trim() ?? made.error?.message}` };
  }
  // Opened read-write and non-blocking, so neither open waits for perf to open its end: "enable"
  // waits in the control FIFO until perf reads it, and the acknowledgement is read as a stream.
  const ctl = openSync(ctlPath, constants.O_RDWR | constants.O_NONBLOCK);
  const ack = new Socket({ fd: openSync(ackPath, constants.O_RDWR | constants.O_NONBLOCK), readable: true, writable: false });
  // realtime timestamps: a sample's time compares with the bench's Date.now() (perf-timeline.ts).
  const child = spawn(
    "perf",
    [
      "record",
      "--delay",
      "-1",
      "--control",
      `fifo:${ctlPath},${ackPath}`,
      "-k",
      "CLOCK_REALTIME",
      "-F",
      String(FREQUENCY_HZ),
      "-g",
      "-p",
      pids.join(","),
      "-o",
      data,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  writeSync(ctl, "enable\n");
  const enabled = await new Promise<boolean>((resolve) => {
    let text = "";
    const timer = setTimeout(() => resolve(false), ENABLE_TIMEOUT_MS);
    ack.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes("ack")) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  ack.destroy();
  if (!enabled) {
    closeSync(ctl);
    child.kill("SIGINT");
    await exited;
    return { ok: false, why: `perf record did not turn its events on within ${ENABLE_TIMEOUT_MS / 1_000} s: ${stderr.trim().slice(-500) || "no output"}` };
  }
  return {
    ok: true,
    recording: {
      async stop() {
        // perf writes its data file on SIGINT, as on Ctrl-C.
        child.kill("SIGINT");
        const code = await exited;
        closeSync(ctl);
        if (code !== 0 && code !== null) throw new Error(`perf record exited ${code}: ${stderr.trim()}`);
        const script = spawnSync("perf", ["script", "-i", data, "-F", "comm,pid,tid,time,ip,sym"], { encoding: "utf8", maxBuffer: 1 << 30 });
        if (script.status !== 0) throw new Error(`perf script exited ${script.status}: ${script.stderr.trim().slice(-2_000)}`);
        return script.stdout;
      },
    },
  };
}
