// Model routing: a spec's `model` is one name or a weighted mix; each task is assigned one model of
// the mix by a hash of swarm and task id, so a rerun routes the same way. No I/O.
import type { ModelChoice } from "./spec-schema.ts";
import { hash32 } from "./hash32.ts";

export interface WeightedModel {
  model: string;
  weight: number;
}

/** The mix as a list (a single name is a mix of one), with weights summing per model. */
export function toModelMix(choice: ModelChoice): WeightedModel[] {
  if (typeof choice === "string") return [{ model: choice, weight: 1 }];
  const merged = new Map<string, number>();
  for (const { model, weight } of choice) merged.set(model, (merged.get(model) ?? 0) + weight);
  return [...merged].map(([model, weight]) => ({ model, weight }));
}

/** `deepseek-v3.2` for one model; `deepseek-v3.2:60,kimi-k2.5:30,claude-sonnet-4.5:10` for a mix. */
export function toModelLabel(choice: ModelChoice): string {
  if (typeof choice === "string") return choice;
  return toModelMix(choice)
    .map(({ model, weight }) => `${model}:${weight}`)
    .join(",");
}

/** The model of the mix this task runs on: deterministic in (swarm id, task id). */
export function assignModel(mix: readonly WeightedModel[], swarmId: string, taskId: string): string {
  const first = mix[0];
  if (first === undefined) throw new RangeError("a model mix needs at least one model");
  if (mix.length === 1) return first.model;
  const total = mix.reduce((sum, m) => sum + m.weight, 0);
  // A uniform point in [0, total): 32 bits of hash are plenty for weights of a few digits.
  let point = (hash32(`${swarmId}\u0000${taskId}`) / 2 ** 32) * total;
  for (const entry of mix) {
    if (point < entry.weight) return entry.model;
    point -= entry.weight;
  }
  return mix[mix.length - 1]?.model ?? first.model;
}
