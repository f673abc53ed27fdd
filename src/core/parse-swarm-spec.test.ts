import { describe, expect, it } from "vitest";
import { parseSwarmSpec, toSwarmSpec } from "./parse-swarm-spec.ts";

const valid = { name: "review", model: "kimi-k2.5", tasks: [{ prompt: "a" }, { id: "b", prompt: "b" }] };

describe("parseSwarmSpec", () => {
  it("fills defaults, splits off the tasks and plans their ids", () => {
    const result = parseSwarmSpec(valid);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.tasks).toEqual([
      { id: "t00001", prompt: "a" },
      { id: "b", prompt: "b" },
    ]);
    expect(result.value.spec).not.toHaveProperty("tasks");
    expect(result.value.spec.limits.concurrency).toBe(32);
  });

  it.each([
    ["missing name", { model: "m", tasks: [{ prompt: "x" }] }, [], "name"],
    ["empty tasks", { ...valid, tasks: [] }, [], "tasks"],
    ["empty prompt", { ...valid, tasks: [{ prompt: "x" }, { prompt: "" }] }, [], "tasks.1.prompt"],
    ["unknown key", { ...valid, colour: "red" }, [], "(root)"],
    ["bad concurrency", { ...valid, limits: { concurrency: 0 } }, [], "limits.concurrency"],
    [
      "duplicate ids",
      {
        ...valid,
        tasks: [
          { id: "x", prompt: "1" },
          { id: "x", prompt: "2" },
        ],
      },
      [],
      "tasks.1.id",
    ],
    ["not an object", "nope", [], "(root)"],
    ["nested: missing name", { model: "m", tasks: [{ prompt: "x" }] }, ["spec"], "spec.name"],
    ["nested: not an object", undefined, ["spec"], "spec"],
    [
      "nested: duplicate ids",
      {
        ...valid,
        tasks: [
          { id: "x", prompt: "1" },
          { id: "x", prompt: "2" },
        ],
      },
      ["spec"],
      "spec.tasks.1.id",
    ],
  ])("%s → issue at %s", (_case, input, at, path) => {
    const result = parseSwarmSpec(input, at);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.map((d) => d.path)).toContain(path);
  });

  it("round-trips through toSwarmSpec with the planned ids kept", () => {
    const first = parseSwarmSpec(valid);
    if (!first.ok) throw new Error("valid spec refused");
    const again = parseSwarmSpec(JSON.parse(JSON.stringify(toSwarmSpec(first.value))));
    expect(again).toEqual(first);
  });
});
