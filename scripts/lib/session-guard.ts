// Runs one command (a `wrangler dev` session) and ends it when the script that started it goes
// away, however that happens: `node session-guard.ts <command> [args…]`.
//
// startStack spawns each session detached, in a process group of its own, so that stop() can signal
// it whole (wrangler, its workerd). That also means nothing ends it when the script dies first: a
// Ctrl-C in a terminal signals the foreground group only, and a SIGKILL, a crash or a `timeout`
// gives the script no chance to run stop(). Node has no parent-death signal (Linux's
// PR_SET_PDEATHSIG), so the guard watches its stdin instead: the script holds the pipe's other
// end, and the kernel closes it when the script exits for any reason. Then the guard signals its
// own process group (itself, the command and everything below it), SIGTERM and, 5 s later,
// SIGKILL. It exits as the command did, so the script sees the session's exit as before.
import { spawn } from "node:child_process";
import { constants } from "node:os";

/** How long a session may take to end after a SIGTERM before it is killed. */
const KILL_AFTER_MS = 5_000;

const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  console.error("usage: node session-guard.ts <command> [args…]");
  process.exit(2);
}

// The command's output goes where the guard's goes; its stdin is not the guard's pipe.
const child = spawn(command, args, { stdio: ["ignore", "inherit", "inherit"] });

/** Signals the guard's process group: itself, the command and the command's children. */
const signalGroup = (signal: NodeJS.Signals): void => {
  try {
    process.kill(-process.pid, signal);
  } catch {
    // the group is gone (or the guard is not its leader: then the command alone)
    child.kill(signal);
  }
};

let ending = false;
const end = (): void => {
  if (ending) return;
  ending = true;
  signalGroup("SIGTERM");
  setTimeout(() => signalGroup("SIGKILL"), KILL_AFTER_MS).unref();
};

// stop() signals the whole group, the guard included: the command gets the same signal and ends
// on its own; the guard waits for it, so that its exit still means "the session has ended".
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => {});

// The script's end of the pipe closed: the script is gone.
process.stdin.on("end", end);
process.stdin.on("error", end);
process.stdin.resume();

child.on("error", (error) => {
  console.error(`session-guard: ${command}: ${error.message}`);
  process.exit(127);
});
child.on("exit", (code, signal) => {
  // As the command ended: its code, or 128 + its signal's number (as a shell reports it).
  process.exit(code ?? 128 + (signal === null ? 0 : constants.signals[signal]));
});
