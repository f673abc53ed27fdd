// V8 CPU profiles (Node's --cpu-prof, workerd's through the inspector) summed into self time:
// by where the code lives (a package under node_modules, a Node internal module, the script) for
// the bench's "where the baseline's CPU goes" lines, or by function for workerd's. No I/O but the
// file read.
import { readFileSync } from "node:fs";
import { z } from "zod";

// Loose: what is not named here (the call tree's `children`, start and end times) is kept, so a
// profile written back is whole for DevTools.
export const CpuProfileSchema = z.looseObject({
  nodes: z.array(z.looseObject({ id: z.number(), callFrame: z.looseObject({ functionName: z.string(), url: z.string(), lineNumber: z.number() }) })),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});
export type CpuProfile = z.infer<typeof CpuProfileSchema>;
type CallFrame = CpuProfile["nodes"][number]["callFrame"];

/**
 * Self time in ms by `keyOf` each sample's frame, largest first, without the keys in `leaveOut`;
 * `bySamples`: each sample counts 1, whatever time passed since the one before.
 */
function selfTime(profile: CpuProfile, keyOf: (frame: CallFrame) => string, leaveOut: readonly string[], bySamples = false): { name: string; ms: number }[] {
  const keys = new Map(profile.nodes.map((node) => [node.id, keyOf(node.callFrame)]));
  const byKey = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const key = keys.get(id) ?? "(unknown)";
    byKey.set(key, (byKey.get(key) ?? 0) + (bySamples ? 1 : (profile.timeDeltas[i] ?? 0) / 1_000));
  });
  for (const key of leaveOut) byKey.delete(key);
  return [...byKey.entries()].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms);
}

/** The bucket a frame's URL belongs to: `openai`, `node:internal/deps/undici`, `(gc)`, the script's file… */
export function toCodeOwner(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packageMatch?.[1] !== undefined) return packageMatch[1];
  if (url.startsWith("node:")) return url.split("/").slice(0, 3).join("/");
  return url.split("/").slice(-1)[0] ?? url;
}

/** Self time in ms by owner (toCodeOwner), largest first; `(idle)` left out. */
export function summarizeCpuProfile(path: string): { name: string; ms: number }[] {
  const profile = CpuProfileSchema.parse(JSON.parse(readFileSync(path, "utf8")));
  return selfTime(profile, (frame) => toCodeOwner(frame.url, frame.functionName), ["(idle)"]);
}

/**
 * Self time in ms by function (name and line in its bundle), largest first; `(idle)` and `(root)`
 * left out. `(program)` is time in workerd's own code outside any JavaScript frame (its streams,
 * sockets, RPC and storage), `(garbage collector)` V8's.
 */
export function selfTimeByFunction(profile: CpuProfile): { name: string; ms: number }[] {
  const nameOf = ({ functionName, lineNumber }: CallFrame): string =>
    functionName === "" ? `(anonymous):${lineNumber + 1}` : functionName.startsWith("(") ? functionName : `${functionName}:${lineNumber + 1}`;
  return selfTime(profile, nameOf, ["(idle)", "(root)"]);
}

/**
 * Samples by the source module of their function, for a profile of an isolate running `bundle` (the
 * Worker's script as wrangler bundled it: esbuild opens each module's code with a `// path` line);
 * largest first, `(idle)` and `(root)` left out. A frame outside the bundle is its function's name
 * (`(program)`, `(garbage collector)`, a runtime API's). Counted, not timed: the time V8 puts on a
 * sample includes any while another isolate of the workerd ran (printWorkerdProfiles' note), which
 * went mostly to `(program)` in a traced swarm's profile (over half its time, an eighth of its samples).
 */
export function samplesByModule(profile: CpuProfile, bundle: string): { name: string; samples: number }[] {
  const starts: number[] = [];
  const modules: string[] = [];
  bundle.split("\n").forEach((line, i) => {
    const module = /^\/\/ (\S+\.[cm]?[jt]sx?)$/.exec(line)?.[1];
    if (module === undefined) return;
    starts.push(i);
    modules.push(module);
  });
  const moduleAt = (line: number): string => {
    // The last module that opens at or before `line` (0-based, as V8's lineNumber).
    let low = 0;
    let high = starts.length - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if ((starts[mid] ?? 0) <= line) {
        found = mid;
        low = mid + 1;
      } else high = mid - 1;
    }
    return modules[found] ?? "(the bundle's own code)";
  };
  const keyOf = ({ functionName, url, lineNumber }: CallFrame): string =>
    url === "" || url.startsWith("node-internal:") || lineNumber < 0 ? (functionName === "" ? "(native)" : functionName) : moduleAt(lineNumber);
  return selfTime(profile, keyOf, ["(idle)", "(root)"], true).map(({ name, ms }) => ({ name, samples: ms }));
}

/** The `limit` largest rows, each as self time per task and share of the total. */
export function formatSelfTimeRows(rows: readonly { name: string; ms: number }[], taskCount: number, limit: number): string[] {
  const total = rows.reduce((sum, row) => sum + row.ms, 0);
  return rows
    .slice(0, limit)
    .map(({ name, ms }) => `  ${(ms / taskCount).toFixed(3).padStart(7)} ms  ${((100 * ms) / Math.max(total, 1e-9)).toFixed(1).padStart(5)}%  ${name}`);
}
