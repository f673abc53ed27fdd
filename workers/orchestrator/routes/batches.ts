// /v1/batches: OpenAI's Batch API. A batch is a swarm whose tasks are its input file's lines, each
// sent upstream as it is (workers/agent/run-batch-line.ts). Creating one checks the file line by line
// as it streams from R2; reading one that has ended writes its output and error files once.
import { Hono, type Context } from "hono";
import { z } from "zod";
import { BATCH_ENDPOINT, toLineRef } from "../../../src/core/batch-line.ts";
import {
  BatchCreateSchema,
  COMPLETION_WINDOW_MS,
  readBatchOverrides,
  toBatchObject,
  toBatchSpec,
  type BatchProgress,
} from "../../../src/core/batch-request.ts";
import { ApiError, toIssueDetails } from "../../../src/core/errors.ts";
import { resolveModelRoute } from "../../../src/core/gateway-config.ts";
import { isBatchId } from "../../../src/core/ids.ts";
import { toModelMix } from "../../../src/core/route-model.ts";
import type { PlannedTask } from "../../../src/core/spec-schema.ts";
import type { SwarmState } from "../../../src/core/swarm-contract.ts";
import type { AppEnv } from "../app-env.ts";
import type { BatchRow } from "../batch-store.ts";
import { checkBatchFile } from "../check-batch-file.ts";
import { finalizeBatch, toLineTaskId } from "../finalize-batch.ts";
import { idempotent, toKeyedSwarmId } from "../idempotency.ts";
import { readJsonBody } from "../json-body.ts";
import { parseQuery } from "../parse-query.ts";
import { startSwarm, toSwarmOwner } from "../start-swarm.ts";
import { toFileKey } from "./files.ts";

/** A swarm in one of these states runs no more tasks: its batch can be finalized. */
const ENDED_STATES: ReadonlySet<SwarmState> = new Set(["completed", "completed_with_failures", "failed", "cancelled"]);

/** A line without max_tokens may write this many tokens (what its call reserves against the budget). */
const DEFAULT_LINE_MAX_TOKENS = 4_096;

export const ListBatchesQuery = z.object({
  after: z.string().max(100).optional(),
  limit: z
    .string()
    .regex(/^\d{1,3}$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(1).max(100))
    .default(20),
});

function notFound(): ApiError {
  return new ApiError("not_found", "batch not found", [{ path: "batch_id", message: "no such batch for this tenant" }]);
}

/** The batch as OpenAI shows it, after moving it on: expired past its window, finalized once its swarm ended. */
async function toView(c: Context<AppEnv>, row: BatchRow) {
  const { deps, tenant } = c.var;
  let current = row;
  const swarmId = row.swarm_id;
  if (swarmId !== null && (current.status === "in_progress" || current.status === "cancelling")) {
    if (current.status === "in_progress" && deps.now() > current.expires_at) {
      await deps.swarmRooms.cancel(swarmId, tenant);
      await deps.batches.cancel(current.id, deps.now(), true);
      current = (await deps.batches.get(tenant, current.id)) ?? current;
    }
    const status = await deps.swarmRooms.getStatus(swarmId, tenant);
    // A cancelled swarm ends at once, while the calls in flight still finish and are recorded: the
    // files wait for them, so a line that finished is in the output, not an error line.
    if (status !== null && ENDED_STATES.has(status.state) && status.counts.running === 0 && status.counts.queued === 0) {
      await finalizeBatch(deps, current);
      current = (await deps.batches.get(tenant, current.id)) ?? current;
    }
  }
  const progress = swarmId === null ? null : await readProgress(c, swarmId);
  return toBatchObject(current, progress);
}

async function readProgress(c: Context<AppEnv>, swarmId: string): Promise<BatchProgress | null> {
  const status = await c.var.deps.swarmRooms.getStatus(swarmId, c.var.tenant);
  if (status === null) return null;
  return {
    completed: status.counts.succeeded,
    failed: status.counts.failed + status.counts.cancelled + status.counts.skipped_budget,
    usage: status.usage,
    model: status.model,
  };
}

export const batchRoutes = new Hono<AppEnv>()
  .post("/", idempotent(), async (c) => {
    const parsed = BatchCreateSchema.safeParse(await readJsonBody(c));
    if (!parsed.success) throw new ApiError("invalid_request", "the batch request is invalid", toIssueDetails(parsed.error));
    const { deps, tenant } = c.var;
    const request = parsed.data;
    const metadata = request.metadata ?? {};
    const overrides = readBatchOverrides(metadata);
    if (!overrides.ok) throw new ApiError("invalid_request", "the batch's edgeswarm metadata is invalid", overrides.error);
    const file = await deps.files.get(tenant, request.input_file_id);
    if (file === null) throw new ApiError("not_found", "input file not found", [{ path: "input_file_id", message: "no such file for this tenant" }]);
    if (file.purpose !== "batch")
      throw new ApiError("invalid_request", 'the input file\'s purpose must be "batch"', [{ path: "input_file_id", message: `purpose is ${file.purpose}` }]);

    const now = deps.now();
    const batchId = deps.newBatchId();
    await deps.batches.insert({
      id: batchId,
      tenant,
      input_file_id: file.id,
      endpoint: request.endpoint,
      completion_window: request.completion_window,
      metadata: Object.keys(metadata).length === 0 ? null : JSON.stringify(metadata),
      created_at: now,
      expires_at: now + COMPLETION_WINDOW_MS,
    });
    const inputKey = toFileKey(tenant, file.id);
    const input = await deps.fileObjects.read(inputKey);
    if (input === null) throw new ApiError("not_found", "input file not found", [{ path: "input_file_id", message: "its content is gone" }]);
    const admission = deps.admission(tenant, c.var.caller.limits);
    const allowed = c.var.caller.limits.models;
    const override = overrides.value.model;
    const check = await checkBatchFile(input, {
      endpoint: BATCH_ENDPOINT,
      modelOverride: override === null ? null : (toModelMix(override)[0]?.model ?? null),
      isAllowedModel: (model) =>
        (admission.gateway === null || resolveModelRoute(admission.gateway, model) !== null) && (allowed === undefined || allowed.includes(model)),
    });
    if (!check.ok) {
      await deps.batches.fail(batchId, check.errors, deps.now());
    } else {
      const lines = check.lines;
      const model = override ?? lines[0]?.model ?? "";
      const spec = toBatchSpec({
        batchId,
        model,
        maxUsd: overrides.value.maxUsd,
        maxOutputTokens: Math.min(128_000, Math.max(...lines.map((l) => l.maxTokens ?? DEFAULT_LINE_MAX_TOKENS))),
      });
      const tasks: PlannedTask[] = lines.map((l) => ({
        id: toLineTaskId(l.line),
        prompt: toLineRef(l),
        ...(override === null && l.model !== model ? { model: l.model } : {}),
      }));
      const key = c.var.idempotencyKey;
      const keyedId = key === undefined ? undefined : await toKeyedSwarmId(tenant, `batch:${key}`);
      try {
        const { swarmId } = await startSwarm(
          deps,
          toSwarmOwner(c),
          { spec, tasks },
          { kind: "api" },
          { batchInput: inputKey, ...(keyedId === undefined ? {} : { keyedId }) },
        );
        await deps.batches.start(batchId, swarmId, tasks.length, deps.now());
      } catch (error) {
        // Refused before any call (limits, budget, models): the batch fails with the reason, as a line would.
        if (!(error instanceof ApiError)) throw error;
        const errors = (error.details.length > 0 ? error.details : [{ path: "(batch)", message: error.message }]).map((d) => ({
          code: error.code,
          message: `${d.path}: ${d.message}`,
          line: 0,
          param: d.path,
        }));
        await deps.batches.fail(batchId, errors, deps.now());
      }
    }
    const row = await deps.batches.get(tenant, batchId);
    if (row === null) throw new Error(`batch ${batchId} vanished after it was stored`);
    return c.json(await toView(c, row), 200);
  })

  .get("/", async (c) => {
    const query = parseQuery(c, ListBatchesQuery);
    const page = await c.var.deps.batches.list(c.var.tenant, { after: query.after ?? null, limit: query.limit });
    const data = [];
    for (const row of page.batches) data.push(await toView(c, row));
    return c.json({ object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore });
  })

  .get("/:id", async (c) => {
    const id = c.req.param("id");
    const row = isBatchId(id) ? await c.var.deps.batches.get(c.var.tenant, id) : null;
    if (row === null) throw notFound();
    return c.json(await toView(c, row));
  })

  .post("/:id/cancel", async (c) => {
    const id = c.req.param("id");
    const { deps, tenant } = c.var;
    const row = isBatchId(id) ? await deps.batches.get(tenant, id) : null;
    if (row === null) throw notFound();
    if (row.status === "in_progress" && row.swarm_id !== null) {
      await deps.batches.cancel(row.id, deps.now(), false);
      await deps.swarmRooms.cancel(row.swarm_id, tenant);
    } else if (row.status !== "cancelling" && row.status !== "cancelled") {
      throw new ApiError("conflict", `a ${row.status} batch cannot be cancelled`, [{ path: "status", message: row.status }]);
    }
    const current = (await deps.batches.get(tenant, id)) ?? row;
    return c.json(await toView(c, current));
  });
