import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { MAX_AGENT_PROCESSES, toAgentConfigs } from "./agent-configs.ts";

const AGENT_DIR = path.resolve(import.meta.dirname, "..", "..", "workers", "agent");
const source = readFileSync(path.join(AGENT_DIR, "wrangler.toml"), "utf8");
const main = path.join(AGENT_DIR, "index.ts");
/** Where the stack writes the configs: elsewhere than the agent's folder. */
const OUT_DIR = "/tmp/edgeswarm-agent-configs-test";
const configsOf = (text: string, processes: number) => toAgentConfigs(text, AGENT_DIR, OUT_DIR, processes);

interface Config {
  name: string;
  main: string;
  durable_objects: { bindings: Array<{ name: string; class_name: string; script_name?: string }> };
  queues?: { consumers?: Array<{ queue: string }> };
  migrations: unknown;
  vars: Record<string, string>;
  r2_buckets: unknown;
}
const read = (text: string): Config => parse(text) as unknown as Config;

describe("the agent's configs for a stack of several agent processes", () => {
  it.each([
    [2, ["edgeswarm-agent", "edgeswarm-agent-2"]],
    [3, ["edgeswarm-agent", "edgeswarm-agent-2", "edgeswarm-agent-3"]],
    [MAX_AGENT_PROCESSES, ["edgeswarm-agent", "edgeswarm-agent-2", "edgeswarm-agent-3", "edgeswarm-agent-4"]],
  ])("%i processes: the consumer keeps the Worker's name, the others are numbered", (processes, names) => {
    const configs = configsOf(source, processes);
    expect(configs.map((c) => c.name)).toEqual(names);
    expect(configs.map((c) => read(c.text).name)).toEqual(names);
  });

  it("the consumer binds each other process's LaneExecutor class by script name, after its own bindings", () => {
    const [consumer] = configsOf(source, 3);
    const bindings = read(consumer?.text ?? "").durable_objects.bindings;
    expect(bindings.map((b) => b.name)).toEqual(["SWARM_ROOM", "KEY_POOL", "LANE_EXECUTOR", "LANE_EXECUTOR_2", "LANE_EXECUTOR_3"]);
    expect(bindings.slice(3)).toEqual([
      { name: "LANE_EXECUTOR_2", class_name: "LaneExecutor", script_name: "edgeswarm-agent-2" },
      { name: "LANE_EXECUTOR_3", class_name: "LaneExecutor", script_name: "edgeswarm-agent-3" },
    ]);
  });

  it("only the consumer consumes the queues (a queue has one consumer); the others keep everything else", () => {
    const [consumer, helper] = configsOf(source, 2).map((c) => read(c.text));
    const original = read(source);
    expect(consumer?.queues?.consumers?.map((c) => c.queue)).toEqual(original.queues?.consumers?.map((c) => c.queue));
    expect(helper?.queues).toBeUndefined();
    expect(helper?.durable_objects.bindings).toEqual(original.durable_objects.bindings);
    for (const config of [consumer, helper]) {
      expect(config?.migrations).toEqual(original.migrations);
      expect(config?.vars).toEqual(original.vars);
      expect(config?.r2_buckets).toEqual(original.r2_buckets);
    }
  });

  it("every config runs the agent's own entry point: its `main` rebased onto the folder the files are written to", () => {
    for (const config of configsOf(source, 2)) expect(path.resolve(OUT_DIR, read(config.text).main)).toBe(main);
  });

  it.each([1, 0, MAX_AGENT_PROCESSES + 1, 2.5, Number.NaN])("refuses %s processes, naming the range", (processes) => {
    expect(() => configsOf(source, processes)).toThrow(`agent processes must be an integer from 2 to ${MAX_AGENT_PROCESSES}`);
  });

  it("refuses a config without the LANE_EXECUTOR binding", () => {
    const without = source.replace('name = "LANE_EXECUTOR"', 'name = "SOMETHING_ELSE"');
    expect(() => configsOf(without, 2)).toThrow("binds no LANE_EXECUTOR");
  });
});
