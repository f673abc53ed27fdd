// The local stack's isolates through workerd's own DevTools inspector, with the Chrome DevTools
// Protocol over each target's WebSocket (Node's global WebSocket): CPU profiles (the Profiler
// domain) for `npm run bench -- --workerd-cpu-prof`, where workerd's CPU goes function by function,
// and the JavaScript heap in use (Runtime.getHeapUsage) for `npm run soak`. wrangler's own
// `--inspector-port` lists one target (the first config's Worker); miniflare starts workerd with
// `--inspector-addr=127.0.0.1:0`, whose inspector lists every isolate by service name:
// `core:user:<worker>` (a Worker and the Durable Objects it hosts), `outbound:<n>` (miniflare's
// interceptor, a JavaScript Worker that every outbound fetch of a local Worker passes through when
// the stack keeps it: lib/outbound-interceptor.ts),
// `d1:db`, `queues:queue`, and miniflare's other simulators.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { CpuProfileSchema, type CpuProfile } from "./cpu-profile-summary.ts";
import { listeningPortsOfDescendants } from "./process-tree.ts";

const TargetsSchema = z.array(z.looseObject({ id: z.string(), title: z.string().optional(), webSocketDebuggerUrl: z.string() }));

/** A profile being taken of each Worker the inspector lists; `stop` ends them all. */
export interface WorkerdProfiles {
  stop(): Promise<Array<{ target: string; profile: CpuProfile }>>;
}

/** Sampling interval, µs: V8's default; finer sampling costs the profiled isolate noticeably more CPU. */
export const SAMPLING_INTERVAL_US = 1_000;

async function listTargets(inspectorPort: number, signal?: AbortSignal): Promise<z.infer<typeof TargetsSchema>> {
  const response = await fetch(`http://127.0.0.1:${inspectorPort}/json`, signal === undefined ? {} : { signal });
  if (!response.ok) throw new Error(`the inspector at port ${inspectorPort} answered ${response.status}`);
  return TargetsSchema.parse(await response.json());
}

/**
 * The targets of every inspector in `inspectorPorts`, in their order. Ids are per workerd (each
 * numbers its own `outbound:<n>` from 0), so an id another inspector listed already gets `@<port>`.
 */
async function listAllTargets(inspectorPorts: readonly number[]): Promise<z.infer<typeof TargetsSchema>> {
  const seen = new Set<string>();
  const lists = await Promise.all(inspectorPorts.map(async (port) => ({ port, targets: await listTargets(port) })));
  return lists.flatMap(({ port, targets }) =>
    targets.map((target) => {
      const id = seen.has(target.id) ? `${target.id}@${port}` : target.id;
      seen.add(id);
      return { ...target, id };
    }),
  );
}

/**
 * workerd's own inspector, which lists every isolate by service name (`core:user:<worker>`,
 * `outbound:<n>` — miniflare's interceptor, when the stack keeps it —, `d1:db`, `queues:queue`, …): the listening ports of the workerd processes under the
 * `sessionPids` that answer /json with targets, one a workerd (the local stack runs a workerd per
 * Worker). Empty when there is none (no /proc, or workerd started without `--inspector-addr`).
 */
export async function findWorkerdInspectors(sessionPids: readonly number[]): Promise<number[]> {
  const inspectors: number[] = [];
  for (const port of listeningPortsOfDescendants(sessionPids, "workerd")) {
    try {
      const targets = await listTargets(port, AbortSignal.timeout(2_000));
      if (targets.some((t) => t.id.startsWith("core:user:"))) inspectors.push(port);
    } catch {
      // Not an inspector (the Workers' own HTTP ports answer something else, or nothing).
    }
  }
  return inspectors;
}

/** How long a heap read waits for its full garbage collection. */
const GC_WAIT_MS = 3_000;

/**
 * The JavaScript heap in use now of each isolate `include` accepts, MB, after a full garbage
 * collection when the isolate ran one within GC_WAIT_MS (`collected`). workerd runs the inspector's
 * collection as a task of the isolate, which an idle isolate (an agent between swarms) does not get
 * to: then the heap is read as it is, garbage included.
 */
export async function readHeapUsage(
  inspectorPorts: readonly number[],
  include: (id: string) => boolean = () => true,
): Promise<Array<{ target: string; usedMb: number; totalMb: number; collected: boolean }>> {
  const usage: Array<{ target: string; usedMb: number; totalMb: number; collected: boolean }> = [];
  for (const target of (await listAllTargets(inspectorPorts)).filter((t) => include(t.id))) {
    const session = await openProbedSession(target.webSocketDebuggerUrl);
    try {
      // workerd answers collectGarbage only once the HeapProfiler domain is enabled.
      await session.send("HeapProfiler.enable");
      const collected = await Promise.race([
        session.send("HeapProfiler.collectGarbage").then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), GC_WAIT_MS)),
      ]);
      const heap = z.object({ usedSize: z.number(), totalSize: z.number() }).parse(await session.send("Runtime.getHeapUsage"));
      usage.push({ target: target.id, usedMb: heap.usedSize / 2 ** 20, totalMb: heap.totalSize / 2 ** 20, collected });
    } finally {
      session.close();
    }
  }
  return usage;
}

/** Reads one isolate's JavaScript heap in use, as it is, over one session kept open between reads. */
export interface HeapSampler {
  /** MB in use now, garbage included (no collection is forced: a sample must not change what it samples). */
  usedMb(): Promise<number>;
  /**
   * MB in use after a full garbage collection (false `collected`: the isolate ran none within
   * GC_WAIT_MS). `wake` runs meanwhile: a request that gives an idle isolate a task, in which
   * workerd runs the collection (see readHeapUsage).
   */
  collectedMb(wake?: () => Promise<unknown>): Promise<{ usedMb: number; collected: boolean }>;
  close(): void;
}

/** A heap sampler on the one target whose id is `targetId` (e.g. `core:user:edgeswarm-orchestrator`). */
export async function openHeapSampler(inspectorPorts: readonly number[], targetId: string): Promise<HeapSampler> {
  const target = (await listAllTargets(inspectorPorts)).find((t) => t.id === targetId);
  if (target === undefined) throw new Error(`no inspector target ${targetId}`);
  const session = await openProbedSession(target.webSocketDebuggerUrl);
  // workerd answers collectGarbage only once the HeapProfiler domain is enabled.
  await session.send("HeapProfiler.enable");
  const usedMb = async () => z.object({ usedSize: z.number() }).parse(await session.send("Runtime.getHeapUsage")).usedSize / 2 ** 20;
  return {
    usedMb,
    async collectedMb(wake) {
      const collection = session.send("HeapProfiler.collectGarbage").then(() => true);
      await wake?.();
      const collected = await Promise.race([collection, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), GC_WAIT_MS))]);
      return { usedMb: await usedMb(), collected };
    },
    close: () => session.close(),
  };
}

/**
 * Profiles the targets the inspectors at `inspectorPorts` list whose id `include` accepts (all by
 * default), a sample every `intervalUs`.
 */
export async function startWorkerdProfiles(
  inspectorPorts: readonly number[],
  include: (id: string) => boolean = () => true,
  intervalUs = SAMPLING_INTERVAL_US,
): Promise<WorkerdProfiles> {
  const targets = (await listAllTargets(inspectorPorts)).filter((t) => include(t.id));
  const sessions = await Promise.all(targets.map(async (target) => ({ target: target.id, session: await openProbedSession(target.webSocketDebuggerUrl) })));
  for (const { session } of sessions) {
    await session.send("Profiler.enable");
    await session.send("Profiler.setSamplingInterval", { interval: intervalUs });
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

/**
 * A session whose first command is answered. Right after the stack starts, workerd's inspector
 * accepts a connection and closes it at the first command ("client closed connection") until the
 * isolate's inspector is up, about a second later: so connect, probe, and retry for a few seconds.
 */
async function openProbedSession(url: string): Promise<Session> {
  for (let attempt = 1; ; attempt++) {
    const session = await openSession(url);
    try {
      await session.send("Runtime.getIsolateId");
      return session;
    } catch (error) {
      session.close();
      if (attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
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
  // A session that closes (workerd drops it, the isolate goes) fails what still waits for an answer.
  socket.addEventListener("close", (event) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`the inspector closed ${url} (${event.code} ${event.reason})`));
    pending.clear();
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
