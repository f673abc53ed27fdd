// The local stack's Workers through wrangler dev's DevTools inspector, with the Chrome DevTools
// Protocol over each target's WebSocket (Node's global WebSocket): CPU profiles (the Profiler
// domain) for `npm run bench -- --workerd-cpu-prof`, where workerd's CPU goes function by function,
// and the JavaScript heap in use (Runtime.getHeapUsage) for `npm run soak`. wrangler lists one
// target, the agent's isolate; miniflare's own simulators (the local Queue and D1) and the
// orchestrator's isolate are not listed.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { CpuProfileSchema, type CpuProfile } from "./cpu-profile-summary.ts";

const TargetsSchema = z.array(z.looseObject({ id: z.string(), title: z.string().optional(), webSocketDebuggerUrl: z.string() }));

/** A profile being taken of each Worker the inspector lists; `stop` ends them all. */
export interface WorkerdProfiles {
  stop(): Promise<Array<{ target: string; profile: CpuProfile }>>;
}

/** Sampling interval, µs: V8's default; finer sampling costs the profiled isolate noticeably more CPU. */
const SAMPLING_INTERVAL_US = 1_000;

async function listTargets(inspectorPort: number): Promise<z.infer<typeof TargetsSchema>> {
  const response = await fetch(`http://127.0.0.1:${inspectorPort}/json`);
  if (!response.ok) throw new Error(`the inspector at port ${inspectorPort} answered ${response.status}`);
  return TargetsSchema.parse(await response.json());
}

/** The JavaScript heap each listed isolate uses now (after a full garbage collection), MB. */
export async function readHeapUsage(inspectorPort: number): Promise<Array<{ target: string; usedMb: number; totalMb: number }>> {
  const usage: Array<{ target: string; usedMb: number; totalMb: number }> = [];
  for (const target of await listTargets(inspectorPort)) {
    const session = await openSession(target.webSocketDebuggerUrl);
    try {
      await session.send("HeapProfiler.collectGarbage");
      const heap = z.object({ usedSize: z.number(), totalSize: z.number() }).parse(await session.send("Runtime.getHeapUsage"));
      usage.push({ target: target.title ?? target.id, usedMb: heap.usedSize / 2 ** 20, totalMb: heap.totalSize / 2 ** 20 });
    } finally {
      session.close();
    }
  }
  return usage;
}

export async function startWorkerdProfiles(inspectorPort: number): Promise<WorkerdProfiles> {
  const targets = await listTargets(inspectorPort);
  const sessions = await Promise.all(
    targets.map(async (target) => ({ target: target.title ?? target.id, session: await openSession(target.webSocketDebuggerUrl) })),
  );
  for (const { session } of sessions) {
    await session.send("Profiler.enable");
    await session.send("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
    await session.send("Profiler.start");
  }
  return {
    async stop() {
      const profiles: Array<{ target: string; profile: CpuProfile }> = [];
      for (const { target, session } of sessions) {
        const result = z.object({ profile: CpuProfileSchema }).parse(await session.send("Profiler.stop"));
        profiles.push({ target, profile: result.profile });
        session.close();
      }
      return profiles;
    },
  };
}

interface Session {
  send(method: string, params?: Record<string, unknown>): Promise<unknown>;
  close(): void;
}

async function openSession(url: string): Promise<Session> {
  // miniflare's inspector proxy refuses an upgrade without an allowed Origin (DevTools sends one;
  // Node's WebSocket sends a User-Agent, so the proxy's default for agents without one does not apply).
  // undici's WebSocket takes headers as a second argument (not in the DOM typings).
  const socket = new (WebSocket as unknown as new (url: string, options: { headers: Record<string, string> }) => WebSocket)(url, {
    headers: { origin: "http://localhost" },
  });
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error(`could not connect to the inspector at ${url}`)), { once: true });
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  socket.addEventListener("message", (event) => {
    const message = z
      .looseObject({ id: z.number().optional(), result: z.unknown().optional(), error: z.unknown().optional() })
      .parse(JSON.parse(String(event.data)));
    if (message.id === undefined) return;
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error !== undefined) waiter?.reject(new Error(`inspector: ${JSON.stringify(message.error)}`));
    else waiter?.resolve(message.result);
  });
  let next = 1;
  return {
    send(method, params = {}) {
      const id = next++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        socket.send(JSON.stringify({ id, method, params }));
      });
    },
    close: () => socket.close(),
  };
}

/** Writes each profile as `<dir>/<target>.cpuprofile` (DevTools opens them) and returns the paths. */
export function writeProfiles(dir: string, profiles: Array<{ target: string; profile: CpuProfile }>): string[] {
  return profiles.map(({ target, profile }) => {
    const file = path.join(dir, `${target.replace(/[^\w.-]+/g, "_")}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    return file;
  });
}
