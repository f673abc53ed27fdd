// /v1/schedules: save a cron schedule that starts a swarm spec, list the tenant's, delete one.
// The spec is validated and admitted exactly as POST /v1/swarms does it, so a bad spec is refused when saved, not at
// run time (a run whose spec no longer admits, after a settings change, is logged as failed).
import { Hono } from "hono";
import { ApiError } from "../../../src/core/errors.ts";
import { isScheduleId } from "../../../src/core/ids.ts";
import { toSwarmSpec } from "../../../src/core/parse-swarm-spec.ts";
import { parseScheduleInput } from "../../../src/core/schedule-schema.ts";
import type { AppEnv } from "../app-env.ts";
import { idempotent } from "../idempotency.ts";
import { readJsonBody } from "../json-body.ts";
import { requireAdmission, requireReachableTools } from "../start-swarm.ts";
import { toScheduleView } from "../schedule-view.ts";
import { toModelLabel } from "../../../src/core/route-model.ts";

export const scheduleRoutes = new Hono<AppEnv>()
  .post("/", idempotent(), async (c) => {
    const input = parseScheduleInput(await readJsonBody(c));
    if (!input.ok) throw new ApiError("invalid_spec", "the schedule is invalid", input.error);
    const { deps, tenant } = c.var;
    const { name, cron, swarm, enabled } = input.value;
    requireReachableTools(swarm, deps.config, "spec.");
    requireAdmission(swarm, deps, { tenant, limits: c.var.caller.limits }, "spec.");
    const schedule = { id: deps.newScheduleId(), tenant, name, cron: cron.expression, enabled, createdAt: deps.now() };
    // The planned spec is stored (generated task ids included), so every run gets the same task ids.
    await deps.schedules.insert({ ...schedule, spec: JSON.stringify(toSwarmSpec(swarm)) });
    const row = {
      ...schedule,
      lastRunMinute: null,
      lastSwarmId: null,
      swarm: { name: swarm.spec.name, model: toModelLabel(swarm.spec.model), tasks: swarm.tasks.length, goal: swarm.spec.goal ?? null },
    };
    return c.json(toScheduleView(row, deps.now()), 201);
  })

  .get("/", async (c) => {
    const { deps, tenant } = c.var;
    const rows = await deps.schedules.listForTenant(tenant);
    const now = deps.now();
    return c.json({ schedules: rows.map((row) => toScheduleView(row, now)) });
  })

  .delete("/:id", async (c) => {
    const id = c.req.param("id");
    // Another tenant's schedule is "not found" too: its existence is not the caller's business.
    if (!isScheduleId(id) || !(await c.var.deps.schedules.deleteForTenant(c.var.tenant, id))) {
      throw new ApiError("not_found", "schedule not found");
    }
    return c.body(null, 204);
  });
