import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const GUARD = path.join(import.meta.dirname, "session-guard.ts");
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The guard around `node -e script`, spawned as startStack spawns a session: detached, its stdin a pipe. */
function guarded(script: string): { guard: ChildProcess; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const guard = spawn(process.execPath, [GUARD, process.execPath, "-e", script], { detached: true, stdio: ["pipe", "ignore", "inherit"] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    guard.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { guard, exited };
}

/** Whether `pid` runs: it exists and is not a zombie (one killed with its parent stays one until its new parent reaps it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch (error) {
    // Gone since kill(pid, 0); or no /proc, where kill(pid, 0) is all there is.
    return (error as NodeJS.ErrnoException).code !== "ENOENT" || !existsSync("/proc/self");
  }
}

/** Whether `pid` is gone within 2 s. */
async function goneSoon(pid: number): Promise<boolean> {
  for (let i = 0; i < 40 && alive(pid); i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
  return !alive(pid);
}

/** A command that writes its pid to a file, then runs until signalled (`onTerm`: what it does on SIGTERM). */
function longRunning(onTerm: string): { script: string; pidOf: () => Promise<number> } {
  const dir = mkdtempSync(path.join(tmpdir(), "session-guard-"));
  dirs.push(dir);
  const file = path.join(dir, "pid");
  // The handler goes in before the pid is written: a test that signals as soon as it reads the pid
  // must not find the command still without it (Node's default for SIGTERM is to die, code 143).
  const script = `process.on("SIGTERM", () => { ${onTerm} }); require("node:fs").writeFileSync(${JSON.stringify(file)}, String(process.pid)); setInterval(() => {}, 1000);`;
  const pidOf = async () => {
    for (let i = 0; i < 100; i += 1) {
      try {
        // An empty read is the file between its creation and its write.
        const pid = Number(readFileSync(file, "utf8"));
        if (pid > 0) return pid;
      } catch {
        // Not there yet.
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("the command never started");
  };
  return { script, pidOf };
}

describe("the session guard", () => {
  it("ends the session when the script that started it goes away (its stdin closes)", async () => {
    const command = longRunning("process.exit(0)");
    const { guard, exited } = guarded(command.script);
    const pid = await command.pidOf();
    expect(alive(pid)).toBe(true);
    guard.stdin?.end(); // what the kernel does when the script dies, SIGKILL included
    await exited;
    expect(await goneSoon(pid)).toBe(true);
  });

  it("kills a session that ignores SIGTERM, 5 s later", async () => {
    const command = longRunning("/* ignored */");
    const { guard, exited } = guarded(command.script);
    const pid = await command.pidOf();
    const closedAt = Date.now();
    guard.stdin?.end();
    const { signal } = await exited;
    expect(signal).toBe("SIGKILL");
    expect(Date.now() - closedAt).toBeGreaterThanOrEqual(4_500);
    expect(await goneSoon(pid)).toBe(true);
  }, 15_000);

  it("exits as the command did", async () => {
    const { exited } = guarded("process.exit(3)");
    expect(await exited).toEqual({ code: 3, signal: null });
  });

  it("waits for the command when its group is signalled (stop()), and exits with its code", async () => {
    const command = longRunning("setTimeout(() => process.exit(7), 200)");
    const { guard, exited } = guarded(command.script);
    const pid = await command.pidOf();
    process.kill(-(guard.pid ?? 0), "SIGTERM");
    expect(await exited).toEqual({ code: 7, signal: null });
    expect(await goneSoon(pid)).toBe(true);
  });

  it("reports a command that was killed as a shell does (128 + its signal)", async () => {
    const command = longRunning("/* ignored */");
    const { exited } = guarded(command.script);
    process.kill(await command.pidOf(), "SIGKILL");
    expect(await exited).toEqual({ code: 137, signal: null });
  });
});
