// HTTP: /v1/schedules create, list and delete against local D1, with the same spec validation as
// POST /v1/swarms plus the cron expression, and per-tenant visibility.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { callApi, createTenantKey, TOKEN_A, validSpec } from "./call-api.ts";

const TOKEN_B = (await createTenantKey({ name: "schedules-b", scopes: ["run"] })).key;
import { readErrorBody } from "./error-body.ts";

const ScheduleSchema = z.strictObject({
  id: z.string().regex(/^sch_[a-z2-7]{16}$/),
  name: z.string(),
  cron: z.string(),
  enabled: z.boolean(),
  swarm: z.strictObject({ name: z.string(), model: z.string(), tasks: z.number(), goal: z.string().nullable() }),
  created_at: z.string(),
  next_run_at: z.string().nullable(),
  last_run_at: z.string().nullable(),
  last_swarm_id: z.string().nullable(),
});
const ListSchema = z.strictObject({ schedules: z.array(ScheduleSchema) });

async function createSchedule(body: Record<string, unknown>, token = TOKEN_A): Promise<z.infer<typeof ScheduleSchema>> {
  const response = await callApi("/v1/schedules", { json: body, token });
  expect(response.status).toBe(201);
  return ScheduleSchema.parse(await response.json());
}

async function listSchedules(token = TOKEN_A): Promise<z.infer<typeof ScheduleSchema>[]> {
  const response = await callApi("/v1/schedules", { token });
  expect(response.status).toBe(200);
  return ListSchema.parse(await response.json()).schedules;
}

describe("POST /v1/schedules", () => {
  it("saves a schedule and answers 201 with its next run", async () => {
    const before = Date.now();
    const schedule = await createSchedule({ name: "nightly review", cron: "30 2 * * *", spec: validSpec() });
    expect(schedule).toMatchObject({
      name: "nightly review",
      cron: "30 2 * * *",
      enabled: true,
      swarm: { name: "review", model: "mock-1", tasks: 3, goal: null },
      last_run_at: null,
      last_swarm_id: null,
    });
    const next = new Date(schedule.next_run_at ?? "");
    expect(next.getTime()).toBeGreaterThan(before);
    expect([next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()]).toEqual([2, 30, 0]);
  });

  it("saves a schedule that starts a swarm from a goal, and lists it (no tasks until each run is planned)", async () => {
    const spec = { name: "weekly research", model: "mock-1", goal: "Research:\n- a\n- b", planner: { max_tasks: 4 }, reduce: { kind: "llm" } };
    const schedule = await createSchedule({ name: "weekly", cron: "0 6 * * 1", spec });
    expect(schedule.swarm).toEqual({ name: "weekly research", model: "mock-1", tasks: 0, goal: "Research:\n- a\n- b" });
    expect((await listSchedules()).find((s) => s.id === schedule.id)?.swarm).toEqual(schedule.swarm);
  });

  it("saves a disabled schedule with no next run", async () => {
    const schedule = await createSchedule({ name: "paused", cron: "@hourly", spec: validSpec(), enabled: false });
    expect(schedule).toMatchObject({ enabled: false, next_run_at: null });
  });

  it.each<[string, unknown, string[]]>([
    ["a six-field cron", { name: "n", cron: "0 * * * * *", spec: validSpec() }, ["cron"]],
    ["a minute out of range", { name: "n", cron: "60 * * * *", spec: validSpec() }, ["cron"]],
    ["an unsupported L", { name: "n", cron: "0 0 L * *", spec: validSpec() }, ["cron"]],
    ["a missing cron", { name: "n", spec: validSpec() }, ["cron"]],
    ["a missing name", { cron: "* * * * *", spec: validSpec() }, ["name"]],
    ["a missing spec", { name: "n", cron: "* * * * *" }, ["spec"]],
    ["a spec without tasks", { name: "n", cron: "* * * * *", spec: validSpec({ tasks: [] }) }, ["spec.tasks"]],
    ["an empty prompt", { name: "n", cron: "* * * * *", spec: validSpec({ tasks: [{ prompt: "" }] }) }, ["spec.tasks.0.prompt"]],
    [
      "duplicate task ids",
      {
        name: "n",
        cron: "* * * * *",
        spec: validSpec({
          tasks: [
            { id: "a", prompt: "1" },
            { id: "a", prompt: "2" },
          ],
        }),
      },
      ["spec.tasks.1.id"],
    ],
    ["bad concurrency", { name: "n", cron: "* * * * *", spec: validSpec({ limits: { concurrency: 99_999 } }) }, ["spec.limits.concurrency"]],
    ["enabled as a string", { name: "n", cron: "* * * * *", spec: validSpec(), enabled: "yes" }, ["enabled"]],
    ["an unknown key", { name: "n", cron: "* * * * *", spec: validSpec(), timezone: "UTC" }, ["(root)"]],
    // Admitted as POST /v1/swarms admits it (vitest.config.ts: tiers premium and economy).
    [
      "a USD budget over a model without a price",
      { name: "n", cron: "* * * * *", spec: validSpec({ model: "unpriced-model", budget: { max_usd: 1 } }) },
      ["spec.budget.max_usd"],
    ],
    [
      "a fallback tier no gateway model has",
      { name: "n", cron: "* * * * *", spec: validSpec({ budget: { max_tokens: 10_000, fallback_tier: "bargain" } }) },
      ["spec.budget.fallback_tier"],
    ],
  ])("%s → 400 naming %j", async (_case, body, paths) => {
    const response = await callApi("/v1/schedules", { json: body });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_spec");
    expect(error.details.map((d) => d.path).sort()).toEqual([...paths].sort());
  });

  it("passes the cron parser's message through", async () => {
    const response = await callApi("/v1/schedules", { json: { name: "n", cron: "60 * * * *", spec: validSpec() } });
    const [detail] = (await readErrorBody(response)).details;
    expect(detail?.message).toMatch(/minute.*out of range/);
  });

  it("refuses malformed JSON with 400 invalid_request at (body)", async () => {
    const response = await callApi("/v1/schedules", { body: "{", headers: { "content-type": "application/json" } });
    expect(response.status).toBe(400);
    expect((await readErrorBody(response)).details.map((d) => d.path)).toEqual(["(body)"]);
  });

  it("needs a token", async () => {
    const response = await callApi("/v1/schedules", { token: null, json: { name: "n", cron: "* * * * *", spec: validSpec() } });
    expect(response.status).toBe(401);
  });
});

describe("GET and DELETE /v1/schedules", () => {
  it("lists only the caller's schedules, newest first, and deletes one with 204", async () => {
    const first = await createSchedule({ name: "one", cron: "0 * * * *", spec: validSpec() });
    const second = await createSchedule({ name: "two", cron: "15 * * * *", spec: validSpec() });
    const other = await createSchedule({ name: "theirs", cron: "0 * * * *", spec: validSpec() }, TOKEN_B);

    const mine = (await listSchedules()).map((s) => s.id);
    expect(mine.filter((id) => id === first.id || id === second.id)).toEqual([second.id, first.id]);
    expect(mine).not.toContain(other.id);

    const deleted = await callApi(`/v1/schedules/${first.id}`, { method: "DELETE" });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    expect((await listSchedules()).map((s) => s.id)).not.toContain(first.id);

    const again = await callApi(`/v1/schedules/${first.id}`, { method: "DELETE" });
    expect(again.status).toBe(404);
  });

  it("answers 404 when deleting another tenant's schedule, and leaves it in place", async () => {
    const theirs = await createSchedule({ name: "theirs", cron: "0 * * * *", spec: validSpec() }, TOKEN_B);
    const response = await callApi(`/v1/schedules/${theirs.id}`, { method: "DELETE", token: TOKEN_A });
    expect(response.status).toBe(404);
    expect((await readErrorBody(response)).code).toBe("not_found");
    expect((await listSchedules(TOKEN_B)).map((s) => s.id)).toContain(theirs.id);
  });

  it.each(["sch_aaaaaaaaaaaaaaaa", "nope", "sw_aaaaaaaaaaaaaaaaaaaa"])("answers 404 for id %s", async (id) => {
    const response = await callApi(`/v1/schedules/${id}`, { method: "DELETE" });
    expect(response.status).toBe(404);
  });
});
