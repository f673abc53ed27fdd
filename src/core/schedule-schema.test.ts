import { describe, expect, it } from "vitest";
import { parseScheduleInput } from "./schedule-schema.ts";

const spec = { name: "nightly", model: "kimi-k2.5", tasks: [{ prompt: "summarize" }] };

describe("parseScheduleInput", () => {
  it("accepts a schedule, enabled by default", () => {
    const result = parseScheduleInput({ name: "n", cron: "*/5 * * * *", spec });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.enabled).toBe(true);
    expect(result.value.cron.expression).toBe("*/5 * * * *");
    expect(result.value.swarm.tasks).toEqual([{ id: "t00001", prompt: "summarize" }]);
  });

  it.each([
    ["bad cron", { name: "n", cron: "61 * * * *", spec }, ["cron"]],
    ["four-field cron", { name: "n", cron: "* * * *", spec }, ["cron"]],
    ["empty cron", { name: "n", cron: "", spec }, ["cron"]],
    ["missing spec", { name: "n", cron: "* * * * *" }, ["spec"]],
    ["bad spec field", { name: "n", cron: "* * * * *", spec: { ...spec, tasks: [] } }, ["spec.tasks"]],
    [
      "duplicate task ids",
      {
        name: "n",
        cron: "* * * * *",
        spec: {
          ...spec,
          tasks: [
            { id: "a", prompt: "1" },
            { id: "a", prompt: "2" },
          ],
        },
      },
      ["spec.tasks.1.id"],
    ],
    ["unknown key", { name: "n", cron: "* * * * *", spec, when: "now" }, ["(root)"]],
    ["enabled not boolean", { name: "n", cron: "* * * * *", spec, enabled: "yes" }, ["enabled"]],
    ["everything wrong at once", { cron: "nope", spec: {} }, ["name", "cron", "spec.name", "spec.model", "spec.tasks"]],
  ])("%s → issues at %j", (_case, input, paths) => {
    const result = parseScheduleInput(input);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.map((d) => d.path).sort()).toEqual([...paths].sort());
  });

  it("passes the cron parser's message through", () => {
    const result = parseScheduleInput({ name: "n", cron: "61 * * * *", spec });
    expect(result.ok ? null : result.error[0]?.message).toMatch(/minute/);
  });
});
