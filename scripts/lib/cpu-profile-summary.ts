// Reads a V8 .cpuprofile (Node's --cpu-prof) and sums self time by where the code lives: a package
// under node_modules, a Node internal module, or the script itself. For the bench's "where the
// baseline's CPU goes" lines; no I/O but the file read.
import { readFileSync } from "node:fs";
import { z } from "zod";

const ProfileSchema = z.object({
  nodes: z.array(z.object({ id: z.number(), callFrame: z.object({ functionName: z.string(), url: z.string() }) })),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});

/** The bucket a frame's URL belongs to: `openai`, `node:internal/deps/undici`, `(gc)`, the script's file… */
export function toCodeOwner(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packageMatch?.[1] !== undefined) return packageMatch[1];
  if (url.startsWith("node:")) return url.split("/").slice(0, 3).join("/");
  return url.split("/").slice(-1)[0] ?? url;
}

/** Self time in ms by owner, largest first; `(idle)` left out. */
export function summarizeCpuProfile(path: string): { owner: string; ms: number }[] {
  const profile = ProfileSchema.parse(JSON.parse(readFileSync(path, "utf8")));
  const owners = new Map(profile.nodes.map((node) => [node.id, toCodeOwner(node.callFrame.url, node.callFrame.functionName)]));
  const byOwner = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const owner = owners.get(id) ?? "(unknown)";
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1_000);
  });
  byOwner.delete("(idle)");
  return [...byOwner.entries()].map(([owner, ms]) => ({ owner, ms })).sort((a, b) => b.ms - a.ms);
}
