// CPU time and peak memory of the workerd processes under a `wrangler dev` child, read from Linux
// /proc (utime + stime in clock ticks, VmHWM), for the bench's edgeswarm CPU figure.
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync, readlinkSync } from "node:fs";

export interface ProcessUsage {
  pid: number;
  /** utime + stime, in ms. */
  cpuMs: number;
  /** Peak resident set size (VmHWM), in MB. */
  peakRssMb: number;
  /** Resident set size now (VmRSS), in MB: what a leak makes grow. */
  rssMb: number;
}

let ticksPerSecond: number | undefined;

/** `getconf CLK_TCK` (the unit of utime/stime in /proc/<pid>/stat), usually 100. */
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    const run = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
    const n = Number(run.stdout?.trim());
    ticksPerSecond = Number.isInteger(n) && n > 0 ? n : 100;
  }
  return ticksPerSecond;
}

interface Stat {
  comm: string;
  ppid: number;
  ticks: number;
}

/** /proc/<pid>/stat: the command name is in parentheses and may hold spaces, so split after the last ")". */
function readStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  // Fields after the name: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime …
  const rest = text.slice(close + 2).split(" ");
  return { comm: text.slice(open + 1, close), ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) };
}

/** A `Vm…:  N kB` line of /proc/<pid>/status, in MB (0 when unreadable). */
function statusMb(pid: number, field: "VmHWM" | "VmRSS"): number {
  try {
    const kb = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? 0 : Number(kb) / 1024;
  } catch {
    return 0;
  }
}

/** Every process named `name` below the `rootPids` (the roots included), or [] without /proc. */
export function usageOfDescendants(rootPids: readonly number[], name: string): ProcessUsage[] {
  let pids: number[];
  try {
    pids = readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    return [];
  }
  const stats = new Map<number, Stat>();
  for (const pid of pids) {
    const stat = readStat(pid);
    if (stat !== undefined) stats.set(pid, stat);
  }
  const children = new Map<number, number[]>();
  for (const [pid, stat] of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), pid]);
  const tree: number[] = [];
  const todo = [...rootPids];
  for (let pid = todo.pop(); pid !== undefined; pid = todo.pop()) {
    tree.push(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  const msPerTick = 1000 / clockTicks();
  return tree.flatMap((pid) => {
    const stat = stats.get(pid);
    return stat?.comm === name ? [{ pid, cpuMs: stat.ticks * msPerTick, peakRssMb: statusMb(pid, "VmHWM"), rssMb: statusMb(pid, "VmRSS") }] : [];
  });
}

/**
 * The loopback TCP ports the processes named `name` below the `rootPids` listen on, read from
 * /proc/<pid>/net/tcp (state 0A = LISTEN) and matched to the process's own socket fds; [] without
 * /proc. The bench finds workerd's own inspector this way: miniflare starts workerd with
 * `--inspector-addr=127.0.0.1:0`, which lists every isolate (each Worker, miniflare's outbound
 * interceptors when kept, the local Queue and D1), where wrangler's `--inspector-port` lists one.
 */
export function listeningPortsOfDescendants(rootPids: readonly number[], name: string): number[] {
  const ports: number[] = [];
  for (const { pid } of usageOfDescendants(rootPids, name)) {
    let inodes: Set<string>;
    let table: string;
    try {
      inodes = new Set(
        readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
          try {
            const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
            return target.startsWith("socket:[") ? [target.slice("socket:[".length, -1)] : [];
          } catch {
            return [];
          }
        }),
      );
      table = readFileSync(`/proc/${pid}/net/tcp`, "utf8");
    } catch {
      continue;
    }
    // Rows: sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …; addresses are hex ip:port.
    for (const row of table.split("\n").slice(1)) {
      const fields = row.trim().split(/\s+/);
      const [local, state, inode] = [fields[1], fields[3], fields[9]];
      if (local === undefined || state !== "0A" || inode === undefined || !inodes.has(inode)) continue;
      ports.push(Number.parseInt(local.split(":")[1] ?? "", 16));
    }
  }
  return ports;
}
