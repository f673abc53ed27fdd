// GET /openapi.json: the OpenAPI 3.1 document of the API, generated from the zod schemas that
// validate the requests (zod 4's own JSON Schema output, draft 2020-12, which OpenAPI 3.1 uses)
// and the table of operations below. A test checks the table against the routes the app serves.
import { SecretPutSchema } from "../../src/core/tenant-secrets.ts";
import { z } from "zod";
import codeReview from "../../examples/code-review.json";
import research from "../../examples/research.json";
import { ProjectionSchema } from "../../src/core/parse-estimate-request.ts";
import { RerunRequestSchema } from "../../src/core/rerun-request.ts";
import { ScheduleInputSchema } from "../../src/core/schedule-schema.ts";
import { SwarmSpecSchema } from "../../src/core/spec-schema.ts";
import { AuditQuerySchema, KeyCreateSchema, KeyListQuerySchema, TenantCreateSchema, TenantPatchSchema } from "../../src/core/tenant-requests.ts";
import { UsageGroupBySchema } from "../../src/core/usage-report-query.ts";
import { CreateSwarmQuerySchema } from "./create-swarm-query.ts";
import { BatchCreateSchema } from "../../src/core/batch-request.ts";
import { ListBatchesQuery } from "./routes/batches.ts";
import { ListFilesQuery } from "./routes/files.ts";
import { ListSwarmsQuery, ResultsQuery } from "./routes/swarms.ts";

type JsonSchema = Record<string, unknown>;

/** The request side of a schema (defaults optional, transforms by their input), as JSON Schema 2020-12. */
const toSchema = (schema: z.ZodType): JsonSchema => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input", unrepresentable: "any" }) as JsonSchema;
  return rest;
};

const ErrorBodySchema = z.strictObject({
  error: z.strictObject({
    code: z.enum([
      "invalid_spec",
      "invalid_request",
      "unauthorized",
      "budget_exceeded",
      "forbidden",
      "not_found",
      "conflict",
      "payload_too_large",
      "unsupported_media_type",
      "rate_limited",
      "internal",
    ]),
    message: z.string(),
    details: z.array(z.strictObject({ path: z.string(), message: z.string() })),
    request_id: z.string().optional(),
  }),
});

const CreatedSwarmSchema = z.object({
  id: z.string().regex(/^sw_[a-z2-7]{20}$/),
  state: z.enum(["running", "planning"]),
  parent_id: z.string().optional(),
  urls: z.record(z.string(), z.string()),
});

export interface Example {
  summary: string;
  value: unknown;
}

/** One operation of the API; `body` and `query` are the schemas the handler validates with. */
export interface Operation {
  method: "get" | "post" | "put" | "patch" | "delete";
  path: string;
  summary: string;
  tag: string;
  body?: { schema: z.ZodType; examples: Record<string, Example>; extend?: (schema: JsonSchema) => JsonSchema };
  query?: z.ZodObject | { params: Record<string, JsonSchema> };
  responses: Record<string, string>;
  /** The response body's schema on success, where one is declared. */
  success?: z.ZodType;
  stream?: "text/event-stream";
  /** Answers a weak ETag once its subject has ended, and 304 to an If-None-Match that names it. */
  conditional?: true;
}

const { tasks: _exampleTasks, ...researchWithoutTasks } = research;

export const OPERATIONS: readonly Operation[] = [
  {
    method: "post",
    path: "/v1/swarms",
    summary: "Start a swarm (or price it with ?dry_run=1)",
    tag: "swarms",
    body: {
      schema: SwarmSpecSchema,
      examples: {
        research: { summary: "examples/research.json", value: research },
        code_review: { summary: "examples/code-review.json", value: codeReview },
        goal: { summary: "a goal the planner splits", value: { ...researchWithoutTasks, goal: "Map the market for LLM agent infrastructure." } },
      },
    },
    query: CreateSwarmQuerySchema,
    success: CreatedSwarmSchema,
    responses: {
      "202": "started: its id, state and URLs",
      "200": "with dry_run=1: the estimate",
      "400": "invalid spec",
      "402": "budget exceeded",
      "413": "body too large",
    },
  },
  {
    method: "post",
    path: "/v1/swarms/estimate",
    summary: "Price a spec, with an optional monthly projection",
    tag: "swarms",
    body: {
      schema: SwarmSpecSchema,
      examples: { research: { summary: "examples/research.json at 24 jobs a day", value: { ...research, projection: { jobs_per_day: 24 } } } },
      extend: (schema) => ({ ...schema, properties: { ...(schema.properties as JsonSchema), projection: toSchema(ProjectionSchema) } }),
    },
    responses: { "200": "the estimate", "400": "invalid spec" },
  },
  {
    method: "get",
    path: "/v1/swarms",
    summary: "List the tenant's swarms, newest first",
    tag: "swarms",
    query: ListSwarmsQuery,
    responses: { "200": "a page of swarms" },
  },
  {
    method: "get",
    path: "/v1/swarms/{id}",
    summary: "A swarm's status (an ended swarm's with a weak ETag, over all but the billable meters)",
    tag: "swarms",
    conditional: true,
    responses: { "200": "the status", "304": "not modified: If-None-Match names the ended swarm's current ETag (no body)", "404": "no such swarm" },
  },
  {
    method: "get",
    path: "/v1/swarms/{id}/results",
    summary: "A swarm's results, page by page",
    tag: "swarms",
    query: ResultsQuery,
    responses: { "200": "a page of results", "404": "no such swarm" },
  },
  {
    method: "get",
    path: "/v1/swarms/{id}/plan",
    summary: "A goal's plan",
    tag: "swarms",
    responses: { "200": "the plan", "404": "no such swarm, or it has no goal" },
  },
  {
    method: "get",
    path: "/v1/swarms/{id}/tasks/{task_id}",
    summary: "One task's transcript: attempts, model calls, MCP calls (server, tool, latency, bytes, error), messages, output",
    tag: "swarms",
    responses: { "200": "the transcript", "404": "no such swarm or task" },
  },
  {
    method: "post",
    path: "/v1/swarms/{id}/cancel",
    summary: "Cancel a running swarm",
    tag: "swarms",
    responses: { "200": "the status", "404": "no such swarm", "409": "it already ended" },
  },
  {
    method: "post",
    path: "/v1/swarms/{id}/rerun",
    summary: "A new swarm from a subset of an ended swarm's tasks",
    tag: "swarms",
    body: {
      schema: RerunRequestSchema,
      examples: {
        failed: { summary: "the failed tasks", value: { tasks: "failed" } },
        ids: { summary: "two tasks by id", value: { tasks: ["topic-01", "topic-02"] } },
      },
    },
    success: CreatedSwarmSchema,
    responses: { "202": "started", "400": "invalid request or unknown task id", "404": "no such swarm", "409": "still running, or nothing matches" },
  },
  {
    method: "get",
    path: "/v1/swarms/{id}/events",
    summary: "Live events (SSE): snapshot, tasks, progress, done; resume with Last-Event-ID",
    tag: "live",
    stream: "text/event-stream",
    query: { params: { last_event_id: { type: "string", pattern: "^\\d{1,15}$" } } },
    responses: { "200": "the event stream", "404": "no such swarm" },
  },
  {
    method: "get",
    path: "/v1/swarms/{id}/live",
    summary: "Live events over a WebSocket (Upgrade: websocket); the same events as JSON messages",
    tag: "live",
    responses: { "101": "switching protocols", "400": "not a WebSocket upgrade", "404": "no such swarm" },
  },
  {
    method: "get",
    path: "/v1/usage",
    summary: "Usage and cost from the ledger",
    tag: "usage",
    query: {
      params: {
        from: { type: "string", format: "date-time" },
        to: { type: "string", format: "date-time" },
        group_by: toSchema(UsageGroupBySchema),
        tenant_id: { type: "string", description: "the operator only: another tenant's usage" },
      },
    },
    responses: { "200": "the usage report", "400": "invalid query" },
  },
  {
    method: "post",
    path: "/v1/schedules",
    summary: "Save a cron schedule that starts a swarm",
    tag: "schedules",
    body: {
      schema: ScheduleInputSchema,
      examples: { nightly: { summary: "code review every night at 02:00 UTC", value: { name: "nightly review", cron: "0 2 * * *", spec: codeReview } } },
      extend: (schema) => ({ ...schema, properties: { ...(schema.properties as JsonSchema), spec: { $ref: "#/components/schemas/SwarmSpec" } } }),
    },
    responses: { "201": "saved", "400": "invalid schedule or spec" },
  },
  { method: "get", path: "/v1/schedules", summary: "List the tenant's schedules", tag: "schedules", responses: { "200": "the schedules" } },
  { method: "delete", path: "/v1/schedules/{id}", summary: "Delete a schedule", tag: "schedules", responses: { "204": "deleted", "404": "no such schedule" } },
  { method: "get", path: "/v1/me", summary: "The caller: tenant, key, scopes, limits, this month's spend", tag: "keys", responses: { "200": "the caller" } },
  {
    method: "post",
    path: "/v1/tenants",
    summary: "Create a tenant (the operator only)",
    tag: "tenants",
    body: {
      schema: TenantCreateSchema,
      examples: {
        team: { summary: "a team with its own limits", value: { name: "search team", limits: { rpm: 600, max_concurrent_swarms: 5, monthly_usd: 500 } } },
      },
    },
    responses: { "201": "the tenant", "400": "invalid tenant", "403": "not the operator" },
  },
  { method: "get", path: "/v1/tenants", summary: "List tenants", tag: "tenants", responses: { "200": "the tenants" } },
  { method: "get", path: "/v1/tenants/{id}", summary: "A tenant", tag: "tenants", responses: { "200": "the tenant", "404": "no such tenant" } },
  {
    method: "patch",
    path: "/v1/tenants/{id}",
    summary: "Change a tenant's name or limits (the operator only)",
    tag: "tenants",
    body: { schema: TenantPatchSchema, examples: { limits: { summary: "a higher monthly cap", value: { limits: { monthly_usd: 1000 } } } } },
    responses: { "200": "the tenant", "400": "invalid change", "404": "no such tenant" },
  },
  {
    method: "delete",
    path: "/v1/tenants/{id}",
    summary: "Delete a tenant (its keys are revoked)",
    tag: "tenants",
    responses: { "204": "deleted", "404": "no such tenant" },
  },
  {
    method: "post",
    path: "/v1/keys",
    summary: "Create an API key (its secret is shown once)",
    tag: "keys",
    body: {
      schema: KeyCreateSchema,
      examples: { ci: { summary: "a read-only key for CI", value: { tenant_id: "tn_aaaaaaaaaaaaaaaa", name: "ci", scopes: ["read"], rpm: 60 } } },
    },
    responses: { "201": "the key, with its secret", "400": "invalid key", "404": "no such tenant" },
  },
  { method: "get", path: "/v1/keys", summary: "List keys (never their secrets)", tag: "keys", query: KeyListQuerySchema, responses: { "200": "the keys" } },
  { method: "delete", path: "/v1/keys/{id}", summary: "Revoke a key, at once", tag: "keys", responses: { "204": "revoked", "404": "no such key" } },
  {
    method: "post",
    path: "/v1/keys/{id}/rotate",
    summary: "Rotate a key: a new secret",
    tag: "keys",
    responses: { "200": "the new secret", "404": "no such key", "409": "revoked" },
  },
  {
    method: "get",
    path: "/v1/audit",
    summary: "The audit trail (admins)",
    tag: "audit",
    query: AuditQuerySchema,
    responses: { "200": "a page of audit events" },
  },
  {
    method: "put",
    path: "/v1/secrets/{name}",
    summary: "Store a tenant secret (write-only: an MCP server's credential)",
    tag: "secrets",
    body: { schema: SecretPutSchema, examples: { token: { summary: "a code-search token", value: { value: "tok_example" } } } },
    responses: { "201": "created (name and dates only)", "200": "replaced", "400": "invalid name or value", "404": "SECRETS_KEY is unset" },
  },
  {
    method: "get",
    path: "/v1/secrets",
    summary: "List the tenant's secrets (names and dates, never values)",
    tag: "secrets",
    responses: { "200": "the secrets" },
  },
  { method: "delete", path: "/v1/secrets/{name}", summary: "Delete a tenant secret", tag: "secrets", responses: { "204": "deleted", "404": "no such secret" } },
  {
    method: "post",
    path: "/v1/files",
    summary: "Upload a batch input file (multipart/form-data: `file`, `purpose=batch`, either order; streamed to storage, up to FILES_MAX_BYTES)",
    tag: "files",
    responses: { "200": "the File object", "400": "invalid form or purpose", "413": "larger than FILES_MAX_BYTES", "415": "not multipart/form-data" },
  },
  {
    method: "get",
    path: "/v1/files",
    summary: "List the tenant's files, newest first (`after`, `limit`, `purpose`)",
    tag: "files",
    query: ListFilesQuery,
    responses: { "200": "a page of File objects" },
  },
  { method: "get", path: "/v1/files/{id}", summary: "A File object", tag: "files", responses: { "200": "the File object", "404": "no such file" } },
  { method: "get", path: "/v1/files/{id}/content", summary: "A file's bytes", tag: "files", responses: { "200": "the bytes", "404": "no such file" } },
  {
    method: "delete",
    path: "/v1/files/{id}",
    summary: "Delete a file",
    tag: "files",
    responses: { "200": '`{ id, object: "file", deleted: true }`', "404": "no such file" },
  },
  {
    method: "post",
    path: "/v1/batches",
    summary:
      "Start a batch (OpenAI's Batch API): a swarm whose tasks are the input file's lines, each body passed through; metadata edgeswarm.model replaces every line's model, edgeswarm.max_usd is its budget",
    tag: "batches",
    body: {
      schema: BatchCreateSchema,
      examples: {
        batch: {
          summary: "a file written for OpenAI, run on another model",
          value: {
            input_file_id: "file-abc",
            endpoint: "/v1/chat/completions",
            completion_window: "24h",
            metadata: { "edgeswarm.model": "mock-1", "edgeswarm.max_usd": "5" },
          },
        },
      },
    },
    responses: { "200": "the Batch (status failed with errors.data when a line is invalid)", "400": "invalid request", "404": "no such input file" },
  },
  {
    method: "get",
    path: "/v1/batches",
    summary: "List the tenant's batches, newest first (`after`, `limit`)",
    tag: "batches",
    query: ListBatchesQuery,
    responses: { "200": "a page of Batch objects" },
  },
  {
    method: "get",
    path: "/v1/batches/{id}",
    summary: "A Batch: status, request_counts, usage (the ledger's sums), output and error files",
    tag: "batches",
    responses: { "200": "the Batch", "404": "no such batch" },
  },
  {
    method: "post",
    path: "/v1/batches/{id}/cancel",
    summary: "Cancel a batch: finished lines stay in the output file, the rest are batch_cancelled lines in the error file",
    tag: "batches",
    responses: { "200": "the Batch", "404": "no such batch", "409": "the batch has ended" },
  },
  {
    method: "get",
    path: "/v1/webhooks/signing-key",
    summary: "The key the caller's webhook tool calls are signed with",
    tag: "webhooks",
    responses: { "200": "the key", "404": "signing is not configured" },
  },
];

const NAMED_SCHEMAS: [string, z.ZodType][] = [
  ["SwarmSpec", SwarmSpecSchema],
  ["RerunRequest", RerunRequestSchema],
  ["ScheduleInput", ScheduleInputSchema],
  ["Error", ErrorBodySchema],
  ["CreatedSwarm", CreatedSwarmSchema],
];
const nameOf = (schema: z.ZodType): string | undefined => NAMED_SCHEMAS.find(([, s]) => s === schema)?.[0];
const refOrSchema = (schema: z.ZodType): JsonSchema => {
  const name = nameOf(schema);
  return name === undefined ? toSchema(schema) : { $ref: `#/components/schemas/${name}` };
};

const IF_NONE_MATCH: JsonSchema = {
  name: "If-None-Match",
  in: "header",
  required: false,
  description: "The ETag of an earlier answer (weak comparison, RFC 9110 §13.1.2); a match answers 304 without a body",
  schema: { type: "string" },
};
const ETAG_HEADER: JsonSchema = { ETag: { description: "weak; present once the swarm has ended", schema: { type: "string" } } };

function toParameters(operation: Operation): JsonSchema[] {
  const path = [...operation.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
  const headers = operation.conditional === true ? [IF_NONE_MATCH] : [];
  if (operation.query === undefined) return [...path, ...headers];
  const params = "params" in operation.query ? operation.query.params : ((toSchema(operation.query).properties ?? {}) as Record<string, JsonSchema>);
  return [...path, ...Object.entries(params).map(([name, schema]) => ({ name, in: "query", required: false, schema })), ...headers];
}

const toErrorResponse = (description: string): JsonSchema => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

function toOperation(operation: Operation): JsonSchema {
  const responses: Record<string, JsonSchema> = {};
  for (const [status, description] of Object.entries(operation.responses)) {
    const ok = status.startsWith("2");
    if (status === "304") responses[status] = { description, headers: ETAG_HEADER };
    else if (!ok) responses[status] = toErrorResponse(description);
    else if (operation.stream !== undefined) responses[status] = { description, content: { [operation.stream]: { schema: { type: "string" } } } };
    else if (status === "204" || status === "101") responses[status] = { description };
    else
      responses[status] = {
        description,
        content: {
          "application/json": {
            schema: operation.success === undefined || status !== Object.keys(operation.responses)[0] ? {} : refOrSchema(operation.success),
          },
        },
      };
  }
  if (operation.conditional === true) {
    const first = Object.keys(operation.responses)[0];
    if (first !== undefined && responses[first] !== undefined) responses[first] = { ...responses[first], headers: ETAG_HEADER };
  }
  responses["401"] = toErrorResponse("missing or wrong bearer token");
  const doc: JsonSchema = {
    summary: operation.summary,
    tags: [operation.tag],
    operationId: toOperationId(operation),
    parameters: toParameters(operation),
    responses,
  };
  if (operation.body !== undefined) {
    const base = refOrSchema(operation.body.schema);
    const schema = operation.body.extend === undefined ? base : operation.body.extend(toSchema(operation.body.schema));
    doc.requestBody = { required: true, content: { "application/json": { schema, examples: operation.body.examples } } };
  }
  return doc;
}

const toOperationId = (operation: Operation): string =>
  `${operation.method}${operation.path
    .replace(/^\/v1/, "")
    .split("/")
    .filter((s) => s !== "")
    .map((s) =>
      s.startsWith("{")
        ? `By${s.slice(1, 2).toUpperCase()}${s.slice(2, -1).replace(/_(\w)/g, (_m, c: string) => c.toUpperCase())}`
        : s.replace(/(^|[-_])(\w)/g, (_m, _s, c: string) => c.toUpperCase()),
    )
    .join("")}`;

let cached: JsonSchema | null = null;

export function buildOpenApiDocument(): JsonSchema {
  if (cached !== null) return cached;
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const operation of OPERATIONS) {
    paths[operation.path] ??= {};
    (paths[operation.path] as Record<string, JsonSchema>)[operation.method] = toOperation(operation);
  }
  cached = {
    openapi: "3.1.0",
    info: {
      title: "edgeswarm",
      version: "1",
      description:
        "An agent-swarm engine on Cloudflare's edge. Every /v1 route takes `Authorization: Bearer <token>`; errors are `{ error: { code, message, details, request_id } }`.",
    },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    tags: ["swarms", "live", "usage", "schedules", "webhooks", "secrets"].map((name) => ({ name })),
    paths: {
      ...paths,
      "/healthz": { get: { summary: "Liveness", tags: ["ops"], operationId: "getHealthz", security: [], responses: { "200": { description: "ok" } } } },
    },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: Object.fromEntries(NAMED_SCHEMAS.map(([name, schema]) => [name, toSchema(schema)])),
    },
  };
  return cached;
}
