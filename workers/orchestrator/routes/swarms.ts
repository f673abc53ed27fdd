// /v1/swarms: start or estimate a swarm, list the tenant's swarms, read one's status, results and live events.
// Handlers stay thin: validation is in core, swarm state in its SwarmRoom, the index in D1.
import { Hono, type Context } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { ApiError, toIssueDetails } from "../../../src/core/errors.ts";
import { estimateSwarm } from "../../../src/core/estimate-swarm.ts";
import { isSwarmId } from "../../../src/core/ids.ts";
import { parseLastEventId } from "../../../src/core/live-events.ts";
import { parseEstimateRequest } from "../../../src/core/parse-estimate-request.ts";
import { parseSwarmSpec, toSwarmSpec } from "../../../src/core/parse-swarm-spec.ts";
import { RerunRequestSchema } from "../../../src/core/rerun-request.ts";
import type { AppEnv } from "../app-env.ts";
import { parseCreateSwarmQuery } from "../create-swarm-query.ts";
import { idempotent, toKeyedSwarmId } from "../idempotency.ts";
import { bridgeLiveSocket } from "../live-bridge.ts";
import { readJsonBody } from "../json-body.ts";
import { parseQuery } from "../parse-query.ts";
import { recordRequestAudit } from "../audit-trail.ts";
import { isCallerStillValid } from "../auth.ts";
import { startSwarm, toSwarmOwner } from "../start-swarm.ts";
import { streamSwarmEvents } from "../swarm-events.ts";
import { parseSwarmListCursor, toSwarmListCursor } from "../swarm-list-cursor.ts";

/** A decimal limit within [min, max]; "1e3", " 5" and "" are refused rather than coerced. */
const limitParam = (min: number, max: number, fallback: number) =>
  z
    .string()
    .regex(/^\d{1,6}$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .default(fallback);

export const ListSwarmsQuery = z.object({
  limit: limitParam(1, 100, 20),
  cursor: z
    .string()
    .transform((text, ctx) => {
      const cursor = parseSwarmListCursor(text);
      if (cursor === null) ctx.addIssue({ code: "custom", message: "not a cursor returned by this API" });
      return cursor ?? z.NEVER;
    })
    .optional(),
});

export const ResultsQuery = z.object({
  limit: limitParam(1, 1_000, 100),
  // The SwarmRoom's next_cursor is a decimal position; anything else never came from it.
  cursor: z
    .string()
    .regex(/^\d{1,12}$/, "not a cursor returned by this API")
    .optional(),
});

/** A malformed id names no swarm: answer as for an unknown one, without waking a Durable Object for it. */
function requireSwarmId(id: string): string {
  if (!isSwarmId(id)) throw new ApiError("not_found", "swarm not found");
  return id;
}

/** The resume point: the Last-Event-ID header (EventSource sends it), else `?last_event_id=`. */
function toLastEventId(c: Context<AppEnv>): number | null {
  const text = c.req.header("last-event-id") ?? c.req.query("last_event_id");
  if (text !== undefined && parseLastEventId(text) === null) {
    throw new ApiError("invalid_request", "Last-Event-ID must be an event id this API sent", [{ path: "last_event_id", message: "a whole number" }]);
  }
  return parseLastEventId(text);
}

const swarmNotFound = (): ApiError => new ApiError("not_found", "swarm not found");

/** An estimate prices known prompts: a goal's tasks exist only once the planner has run. */
function requireTasksToEstimate(goal: string | undefined): void {
  if (goal !== undefined) {
    throw new ApiError("invalid_spec", "a swarm with a goal cannot be estimated before it is planned", [
      { path: "goal", message: "estimates need tasks; run the swarm and read its plan (GET /v1/swarms/:id/plan), or estimate its tasks" },
    ]);
  }
}

export const swarmRoutes = new Hono<AppEnv>()
  // Registered before the /:id routes; no other POST route has a single segment, so none collides.
  .post("/estimate", async (c) => {
    const request = parseEstimateRequest(await readJsonBody(c));
    if (!request.ok) throw new ApiError("invalid_spec", "the swarm spec is invalid", request.error);
    requireTasksToEstimate(request.value.swarm.spec.goal);
    return c.json(estimateSwarm(request.value.swarm, c.var.deps.priceTable(), request.value.projection));
  })

  .post("/", idempotent(), async (c) => {
    const query = parseCreateSwarmQuery(c);
    const swarm = parseSwarmSpec(await readJsonBody(c));
    if (!swarm.ok) throw new ApiError("invalid_spec", "the swarm spec is invalid", swarm.error);
    // A dry run prices the spec and starts nothing: no SwarmRoom, no index row, no queue message.
    if (query.dryRun) requireTasksToEstimate(swarm.value.spec.goal);
    if (query.dryRun) return c.json(estimateSwarm(swarm.value, c.var.deps.priceTable(), query.projection));
    const key = c.var.idempotencyKey;
    const keyedId = key === undefined ? undefined : await toKeyedSwarmId(c.var.tenant, key);
    const { swarmId } = await startSwarm(c.var.deps, toSwarmOwner(c), swarm.value, { kind: "api" }, keyedId === undefined ? {} : { keyedId });
    const self = new URL(`/v1/swarms/${swarmId}`, c.req.url).href;
    c.header("Location", self);
    const state = swarm.value.spec.goal === undefined ? "running" : "planning";
    const urls = { self, results: `${self}/results`, events: `${self}/events`, ...(state === "planning" ? { plan: `${self}/plan` } : {}) };
    return c.json({ id: swarmId, state, urls }, 202);
  })

  .get("/", async (c) => {
    const query = parseQuery(c, ListSwarmsQuery);
    const page = await c.var.deps.swarmIndex.listForTenant(c.var.tenant, { limit: query.limit, after: query.cursor ?? null });
    return c.json({ swarms: page.swarms, next_cursor: page.next === null ? null : toSwarmListCursor(page.next) });
  })

  // An ended swarm's status carries a weak ETag (billable meters left out: they count every read);
  // If-None-Match with it answers 304 and no body. Caches must ask again each time (no-cache): a
  // rerun or a late call's usage still moves an ended swarm's status.
  .get("/:id", async (c) => {
    const read = await c.var.deps.swarmRooms.readStatus(requireSwarmId(c.req.param("id")), c.var.tenant, c.req.header("if-none-match") ?? null);
    if (read === null) throw swarmNotFound();
    if (read.etag !== null) {
      c.header("ETag", read.etag);
      c.header("Cache-Control", "private, no-cache");
    }
    return read.kind === "not_modified" ? c.body(null, 304) : c.json(read.status);
  })

  .get("/:id/results", async (c) => {
    const id = requireSwarmId(c.req.param("id"));
    const query = parseQuery(c, ResultsQuery);
    const page = await c.var.deps.swarmRooms.getResults(id, c.var.tenant, query.cursor ?? null, query.limit);
    if (page === null) throw swarmNotFound();
    return c.json(page);
  })

  // A goal's plan: the goal, the planner's model and attempts, and every planned sub-task.
  .get("/:id/plan", async (c) => {
    const id = requireSwarmId(c.req.param("id"));
    const plan = await c.var.deps.swarmRooms.getPlan(id, c.var.tenant);
    if (plan === null) {
      const status = await c.var.deps.swarmRooms.getStatus(id, c.var.tenant);
      if (status === null) throw swarmNotFound();
      throw new ApiError("not_found", "this swarm was given tasks, not a goal: it has no plan");
    }
    return c.json(plan);
  })

  // Stops dispatch at once; in-flight calls finish and are recorded; every other open task ends cancelled.
  .post("/:id/cancel", async (c) => {
    const result = await c.var.deps.swarmRooms.cancel(requireSwarmId(c.req.param("id")), c.var.tenant);
    if (result === null) throw swarmNotFound();
    const { status, changed } = result;
    if (!changed && status.state !== "cancelled") {
      throw new ApiError("conflict", `the swarm already ended (${status.state}); there is nothing to cancel`, [{ path: "state", message: status.state }]);
    }
    if (changed) await recordRequestAudit(c, { action: "swarm.cancelled", targetId: status.id });
    return c.json(status);
  })

  // One task's transcript: attempts, every model call, the messages as far as kept, the output.
  .get("/:id/tasks/:task_id", async (c) => {
    const id = requireSwarmId(c.req.param("id"));
    const transcript = await c.var.deps.swarmRooms.getTranscript(id, c.var.tenant, c.req.param("task_id"));
    if (transcript === null) {
      if ((await c.var.deps.swarmRooms.getStatus(id, c.var.tenant)) === null) throw swarmNotFound();
      throw new ApiError("not_found", "this swarm has no such task");
    }
    return c.json(transcript);
  })

  // A new swarm from a subset of an ended swarm's tasks, with the same spec; parent_id links them.
  .post("/:id/rerun", idempotent(), async (c) => {
    const parentId = requireSwarmId(c.req.param("id"));
    const body = RerunRequestSchema.safeParse(await readJsonBody(c));
    if (!body.success) throw new ApiError("invalid_request", "the rerun request is invalid", toIssueDetails(body.error));
    const input = await c.var.deps.swarmRooms.rerunInput(parentId, c.var.tenant, body.data.tasks);
    if (input === null) throw swarmNotFound();
    if (!input.ok) throw new ApiError(input.code, input.message, input.details);
    const swarm = parseSwarmSpec(toSwarmSpec({ spec: input.spec, tasks: input.tasks }));
    if (!swarm.ok) throw new ApiError("invalid_spec", "the parent's spec no longer validates", swarm.error);
    const key = c.var.idempotencyKey;
    const keyedId = key === undefined ? undefined : await toKeyedSwarmId(c.var.tenant, key);
    const { swarmId } = await startSwarm(
      c.var.deps,
      toSwarmOwner(c),
      swarm.value,
      { kind: "api" },
      { parentId, ...(keyedId === undefined ? {} : { keyedId }) },
    );
    await c.var.deps.swarmRooms.addRerun(parentId, swarmId);
    // The rerun runs whatever happens next: a failed audit write must not answer 500 (the client would start it again).
    await recordRequestAudit(c, { action: "swarm.rerun", targetId: swarmId, details: { parent_id: parentId } }).catch((error: unknown) => {
      console.error(`[${c.var.requestId}] audit write of swarm.rerun ${swarmId} failed`, error);
    });
    const self = new URL(`/v1/swarms/${swarmId}`, c.req.url).href;
    c.header("Location", self);
    return c.json(
      {
        id: swarmId,
        state: "running",
        parent_id: parentId,
        tasks: swarm.value.tasks.length,
        urls: { self, results: `${self}/results`, events: `${self}/events` },
      },
      202,
    );
  })

  // Live progress pushed by the SwarmRoom (docs/data.md, "Live events"): a WebSocket here, SSE below.
  .get("/:id/live", async (c) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      throw new ApiError("invalid_request", "this route is a WebSocket: send Upgrade: websocket (or read GET /v1/swarms/:id/events)");
    }
    const live = await c.var.deps.swarmRooms.openLive(requireSwarmId(c.req.param("id")), c.var.tenant, toLastEventId(c));
    if (live?.webSocket == null) throw swarmNotFound();
    const { requestId, caller, deps } = c.var;
    // Bridged, not handed over: a revoked key's open socket closes within a few seconds.
    const client = bridgeLiveSocket({ room: live.webSocket, stillAllowed: () => isCallerStillValid(deps, caller), requestId });
    return new Response(null, { status: 101, webSocket: client });
  })

  .get("/:id/events", async (c) => {
    const live = await c.var.deps.swarmRooms.openLive(requireSwarmId(c.req.param("id")), c.var.tenant, toLastEventId(c));
    // Asked before streaming so an unknown swarm is a plain 404, not an empty stream.
    if (live?.webSocket == null) throw swarmNotFound();
    const socket = live.webSocket;
    const { requestId, caller, deps } = c.var;
    // A revoked key's open stream ends too: the key is asked again every few seconds.
    const stillAllowed = () => isCallerStillValid(deps, caller);
    return streamSSE(c, (stream) => streamSwarmEvents(stream, { socket, requestId, stillAllowed }));
  });
