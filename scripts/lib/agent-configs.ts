// The agent's wrangler configs when the local stack runs its lane executors in more than one
// workerd process: production gives every Durable Object a CPU of its own, while `wrangler dev`
// runs all of a Worker's objects on its workerd's one thread, so at 10,000 tasks one agent
// process was busy the whole wall while the other core had room (docs/benchmarks.md, "Lane
// executors in two agent processes"). The first session consumes the queues and hands each
// ticket to an executor in its own process or another's (workers/agent/lane-executors.ts); the
// others run the same Worker under another name with no queue consumer. Pure: text in, text out.
import { parse, stringify } from "smol-toml";
import { z } from "zod";
import { MAX_EXECUTOR_HOSTS } from "../../src/core/executor-hosts.ts";
import { toDeployConfig } from "./deploy-config.ts";

/** The most agent processes the local stack runs (workers/agent/composition.ts reads this many bindings). */
export const MAX_AGENT_PROCESSES = MAX_EXECUTOR_HOSTS;

export interface AgentSessionConfig {
  /** The Worker's name, as the dev registry knows it. */
  name: string;
  /** The wrangler.toml text. */
  text: string;
}

const AgentConfigSchema = z.looseObject({
  name: z.string().min(1),
  main: z.string().min(1),
  durable_objects: z.looseObject({ bindings: z.array(z.looseObject({ name: z.string(), class_name: z.string() })) }),
  queues: z.looseObject({ consumers: z.array(z.unknown()).optional() }).optional(),
});

/**
 * `processes` (2 … MAX_AGENT_PROCESSES) configs made from the agent's wrangler.toml (`toml`, in
 * `configDir`), to be written to `outDir`: its relative paths (`main`…) rebased onto `outDir` as the
 * deploy's copies are (toDeployConfig; wrangler resolves them against the config file). The first is
 * the consuming session's: the same Worker, which also binds LANE_EXECUTOR_2 … LANE_EXECUTOR_n to
 * the LaneExecutor class of the others. Each other is `<name>-<k>` without queue consumers.
 */
export function toAgentConfigs(toml: string, configDir: string, outDir: string, processes: number): AgentSessionConfig[] {
  if (!Number.isInteger(processes) || processes < 2 || processes > MAX_AGENT_PROCESSES) {
    throw new Error(`agent processes must be an integer from 2 to ${MAX_AGENT_PROCESSES} (got ${processes})`);
  }
  // The agent binds no D1 database: no ids to put in.
  const source = AgentConfigSchema.parse(toDeployConfig(parse(toml), configDir, outDir, new Map()));
  const executor = source.durable_objects.bindings.find((binding) => binding.name === "LANE_EXECUTOR");
  if (executor === undefined) throw new Error("the agent's wrangler.toml binds no LANE_EXECUTOR");
  const names = Array.from({ length: processes - 1 }, (_, i) => `${source.name}-${i + 2}`);
  const consumer = {
    ...source,
    durable_objects: {
      ...source.durable_objects,
      bindings: [
        ...source.durable_objects.bindings,
        ...names.map((scriptName, i) => ({ name: `LANE_EXECUTOR_${i + 2}`, class_name: executor.class_name, script_name: scriptName })),
      ],
    },
  };
  const { queues, ...withoutQueues } = source;
  const { consumers: _consumers, ...otherQueues } = queues ?? {};
  const helpers = names.map((name) => ({
    name,
    text: stringify({ ...withoutQueues, ...(Object.keys(otherQueues).length > 0 ? { queues: otherQueues } : {}), name }),
  }));
  return [{ name: source.name, text: stringify(consumer) }, ...helpers];
}
