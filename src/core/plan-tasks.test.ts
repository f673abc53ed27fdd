import { describe, expect, it } from "vitest";
import { planTasks } from "./plan-tasks.ts";
import type { TaskInput } from "./spec-schema.ts";

const p = (id?: string): TaskInput => (id === undefined ? { prompt: "x" } : { id, prompt: "x" });

describe("planTasks", () => {
  it.each<[string, TaskInput[], string[]]>([
    ["all generated", [p(), p(), p()], ["t00001", "t00002", "t00003"]],
    ["user ids kept", [p("a"), p("b")], ["a", "b"]],
    ["mixed", [p("intro"), p(), p("outro"), p()], ["intro", "t00001", "outro", "t00002"]],
    ["generated ids skip ids the user took", [p(), p("t00002"), p(), p()], ["t00001", "t00002", "t00003", "t00004"]],
    ["skip even when the user id comes later", [p(), p(), p("t00001")], ["t00002", "t00003", "t00001"]],
    ["a single task", [p()], ["t00001"]],
  ])("%s", (_name, tasks, ids) => {
    const r = planTasks(tasks);
    expect(r.ok && r.value.map((t) => t.id)).toEqual(ids);
  });

  it("keeps prompts and order", () => {
    const r = planTasks([{ prompt: "first" }, { id: "b", prompt: "second" }]);
    expect(r).toEqual({
      ok: true,
      value: [
        { id: "t00001", prompt: "first" },
        { id: "b", prompt: "second" },
      ],
    });
  });

  it("widens generated ids past 99,999 tasks", () => {
    const r = planTasks(Array.from({ length: 100_000 }, () => p()));
    expect(r.ok && [r.value[0]?.id, r.value[99_999]?.id]).toEqual(["t000001", "t100000"]);
  });

  it("is stable: the same spec gets the same ids", () => {
    const tasks = [p(), p("t00003"), p(), p("z"), p()];
    expect(planTasks(tasks)).toEqual(planTasks(tasks));
  });

  it("gives unique ids", () => {
    const tasks = [p("t00001"), p(), p("t00003"), p(), p(), p("t00002")];
    const r = planTasks(tasks);
    const ids = r.ok ? r.value.map((t) => t.id) : [];
    expect(new Set(ids).size).toBe(tasks.length);
  });

  it.each<[string, TaskInput[], { path: string; message: string }[]]>([
    ["one duplicate", [p("a"), p("a")], [{ path: "tasks.1.id", message: 'duplicate task id "a" (first used by tasks.0)' }]],
    [
      "each repeat reported",
      [p("a"), p(), p("b"), p("a"), p("b"), p("a")],
      [
        { path: "tasks.3.id", message: 'duplicate task id "a" (first used by tasks.0)' },
        { path: "tasks.4.id", message: 'duplicate task id "b" (first used by tasks.2)' },
        { path: "tasks.5.id", message: 'duplicate task id "a" (first used by tasks.0)' },
      ],
    ],
  ])("duplicates: %s", (_name, tasks, issues) => {
    expect(planTasks(tasks)).toEqual({ ok: false, error: issues });
  });
});
