// HTTP: GET /v1/usage against local D1 with ledger rows seeded directly: exact sums per model, day,
// swarm and token, missing usage, unpriced calls, error rate, p50, tenant isolation, range validation.
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { DAY_MS } from "../../../src/core/usage-report-query.ts";
import { callApi, createTenantKey, TOKEN_A } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";
import { seedLedger, type SeedRow } from "./seed-ledger.ts";

// Tenants of their own, so no other test's ledger rows can land in them.
const U = await createTenantKey({ name: "usage-u", scopes: ["read"] });
const V = await createTenantKey({ name: "usage-v", scopes: ["read"] });
const [TOKEN_U, TOKEN_V, TENANT_U, TENANT_V] = [U.key, V.key, U.tenantId, V.tenantId];

function getUsage(query: string, token = TOKEN_U): Promise<Response> {
  return callApi(`/v1/usage${query}`, { token });
}

const Figures = {
  calls: z.number(),
  prompt_tokens: z.number().nullable(),
  cached_tokens: z.number().nullable(),
  completion_tokens: z.number().nullable(),
  reasoning_tokens: z.number().nullable(),
  total_tokens: z.number().nullable(),
  cost_usd: z.number().nullable(),
  error_rate: z.number().nullable(),
  p50_latency_ms: z.number().nullable(),
  missing_usage_calls: z.number(),
  unpriced_calls: z.number(),
  estimated_calls: z.number(),
};
const ReportSchema = z.strictObject({
  from: z.string(),
  to: z.string(),
  group_by: z.enum(["model", "day", "swarm", "token"]),
  rows: z.array(z.strictObject({ key: z.string(), ...Figures })),
  totals: z.strictObject(Figures),
  scan: z.strictObject({ max_calls: z.number(), capped: z.boolean() }),
});
type Report = z.infer<typeof ReportSchema>;

async function readReport(query: string, token = TOKEN_U): Promise<Report> {
  const response = await getUsage(query, token);
  expect(response.status).toBe(200);
  return ReportSchema.parse(await response.json());
}

const at = (iso: string) => Date.parse(iso);
const usage = (prompt: number, cached: number, completion: number, reasoning: number) => ({
  prompt_tokens: prompt,
  cached_tokens: cached,
  completion_tokens: completion,
  reasoning_tokens: reasoning,
  total_tokens: prompt + completion,
});

/**
 * March 2025, tenant U. Costs are binary fractions so the expected sums are plain numbers.
 * Rows 6 and 7 sit just outside [2025-03-01, 2025-03-03); tenant V's row sits inside it.
 */
const MARCH: SeedRow[] = [
  {
    call_id: "sw_r1:a:1:1",
    tenant: TENANT_U,
    swarm_id: "sw_r1",
    model: "m-alpha",
    created_at: at("2025-03-01T10:00:00Z"),
    ...usage(100, 20, 50, 5),
    cost_usd: 0.25,
    latency_ms: 100,
  },
  {
    call_id: "sw_r1:b:1:1",
    tenant: TENANT_U,
    swarm_id: "sw_r1",
    model: "m-alpha",
    created_at: at("2025-03-01T11:00:00Z"),
    status: "error",
    error_class: "upstream_timeout",
    latency_ms: 3_000,
  },
  {
    call_id: "sw_r1:c:1:1",
    tenant: TENANT_U,
    swarm_id: "sw_r1",
    model: "m-beta",
    created_at: at("2025-03-02T09:00:00Z"),
    ...usage(200, 0, 80, 0),
    cost_usd: 0.5,
    latency_ms: 200,
  },
  {
    call_id: "sw_r2:a:1:1",
    tenant: TENANT_U,
    swarm_id: "sw_r2",
    model: "m-alpha",
    created_at: at("2025-03-02T23:59:59.999Z"),
    ...usage(10, 0, 5, 0),
    cost_usd: 0.125,
    latency_ms: 50,
  },
  // Usage reported, but the model had no price: in the token sums, not in the cost.
  {
    call_id: "sw_r2:b:1:1",
    tenant: TENANT_U,
    swarm_id: "sw_r2",
    model: "m-beta",
    created_at: at("2025-03-02T12:00:00Z"),
    ...usage(40, 10, 10, 2),
    latency_ms: 400,
  },
  {
    call_id: "sw_r2:c:1:1",
    tenant: TENANT_U,
    swarm_id: "sw_r2",
    model: "m-alpha",
    created_at: at("2025-03-03T00:00:00Z"),
    ...usage(1, 0, 1, 0),
    cost_usd: 1,
    latency_ms: 1,
  },
  {
    call_id: "sw_r0:a:1:1",
    tenant: TENANT_U,
    swarm_id: "sw_r0",
    model: "m-alpha",
    created_at: at("2025-02-28T23:59:59.999Z"),
    ...usage(1, 0, 1, 0),
    cost_usd: 1,
    latency_ms: 1,
  },
  {
    call_id: "sw_v1:a:1:1",
    tenant: TENANT_V,
    swarm_id: "sw_v1",
    model: "m-alpha",
    created_at: at("2025-03-01T12:00:00Z"),
    ...usage(9_000, 0, 9_000, 0),
    cost_usd: 64,
    latency_ms: 9_999,
  },
];
const MARCH_RANGE = "from=2025-03-01&to=2025-03-03";

const ALPHA = {
  key: "m-alpha",
  calls: 3,
  prompt_tokens: 110,
  cached_tokens: 20,
  completion_tokens: 55,
  reasoning_tokens: 5,
  total_tokens: 165,
  cost_usd: 0.375,
  error_rate: 1 / 3,
  p50_latency_ms: 100,
  missing_usage_calls: 1,
  unpriced_calls: 0,
  estimated_calls: 0,
};
const BETA = {
  key: "m-beta",
  calls: 2,
  prompt_tokens: 240,
  cached_tokens: 10,
  completion_tokens: 90,
  reasoning_tokens: 2,
  total_tokens: 330,
  cost_usd: 0.5,
  error_rate: 0,
  p50_latency_ms: 200,
  missing_usage_calls: 0,
  unpriced_calls: 1,
  estimated_calls: 0,
};
const MARCH_TOTALS = {
  calls: 5,
  prompt_tokens: 350,
  cached_tokens: 30,
  completion_tokens: 145,
  reasoning_tokens: 7,
  total_tokens: 495,
  cost_usd: 0.875,
  error_rate: 0.2,
  p50_latency_ms: 200,
  missing_usage_calls: 1,
  unpriced_calls: 1,
  estimated_calls: 0,
};

// Ledger storage persists across the tests of this file: the March rows are seeded once.
beforeAll(async () => {
  await seedLedger(MARCH);
});

describe("GET /v1/usage groups", () => {
  it("sums per model, with error rate, nearest-rank p50, missing usage and unpriced calls", async () => {
    const report = await readReport(`?${MARCH_RANGE}&group_by=model`);
    expect(report).toEqual({
      from: "2025-03-01T00:00:00.000Z",
      to: "2025-03-03T00:00:00.000Z",
      group_by: "model",
      rows: [ALPHA, BETA],
      totals: MARCH_TOTALS,
      scan: { max_calls: 1_000_000, capped: false },
    });
  });

  it("sums per UTC day (YYYY-MM-DD), to exclusive", async () => {
    const report = await readReport(`?${MARCH_RANGE}&group_by=day`);
    expect(report.rows).toEqual([
      {
        key: "2025-03-01",
        calls: 2,
        prompt_tokens: 100,
        cached_tokens: 20,
        completion_tokens: 50,
        reasoning_tokens: 5,
        total_tokens: 150,
        cost_usd: 0.25,
        error_rate: 0.5,
        p50_latency_ms: 100,
        missing_usage_calls: 1,
        unpriced_calls: 0,
        estimated_calls: 0,
      },
      {
        key: "2025-03-02",
        calls: 3,
        prompt_tokens: 250,
        cached_tokens: 10,
        completion_tokens: 95,
        reasoning_tokens: 2,
        total_tokens: 345,
        cost_usd: 0.625,
        error_rate: 0,
        p50_latency_ms: 200,
        missing_usage_calls: 0,
        unpriced_calls: 1,
        estimated_calls: 0,
      },
    ]);
    expect(report.totals).toEqual(MARCH_TOTALS);
  });

  it("sums per swarm", async () => {
    const report = await readReport(`?${MARCH_RANGE}&group_by=swarm`);
    expect(report.rows).toEqual([
      {
        key: "sw_r1",
        calls: 3,
        prompt_tokens: 300,
        cached_tokens: 20,
        completion_tokens: 130,
        reasoning_tokens: 5,
        total_tokens: 430,
        cost_usd: 0.75,
        error_rate: 1 / 3,
        p50_latency_ms: 200,
        missing_usage_calls: 1,
        unpriced_calls: 0,
        estimated_calls: 0,
      },
      {
        key: "sw_r2",
        calls: 2,
        prompt_tokens: 50,
        cached_tokens: 10,
        completion_tokens: 15,
        reasoning_tokens: 2,
        total_tokens: 65,
        cost_usd: 0.125,
        error_rate: 0,
        p50_latency_ms: 50,
        missing_usage_calls: 0,
        unpriced_calls: 1,
        estimated_calls: 0,
      },
    ]);
  });

  it("groups by token: the caller's tenant is its one row", async () => {
    const report = await readReport(`?${MARCH_RANGE}&group_by=token`);
    expect(report.rows).toEqual([{ key: TENANT_U, ...MARCH_TOTALS }]);
  });

  it("widens the range to include the rows at its edges", async () => {
    const report = await readReport("?from=2025-02-28T23:59:59.999Z&to=2025-03-03T00:00:00.001Z&group_by=token");
    expect(report.totals.calls).toBe(7);
    expect(report.totals.cost_usd).toBe(2.875);
    // Latencies 1, 1, 50, 100, 200, 400, 3000: rank 4.
    expect(report.totals.p50_latency_ms).toBe(100);
  });

  it("reports a group whose calls all lack usage with null sums, never zeros", async () => {
    const noUsage = (n: number): SeedRow => ({
      call_id: `sw_nu:t${n}:1:1`,
      tenant: TENANT_U,
      swarm_id: "sw_nu",
      model: "m-silent",
      created_at: at(`2025-04-0${n}T00:00:00Z`),
      latency_ms: n * 10,
    });
    await seedLedger([noUsage(1), noUsage(2), noUsage(3), noUsage(4)]);
    const report = await readReport("?from=2025-04-01&to=2025-04-30");
    expect(report.rows).toEqual([
      {
        key: "m-silent",
        calls: 4,
        prompt_tokens: null,
        cached_tokens: null,
        completion_tokens: null,
        reasoning_tokens: null,
        total_tokens: null,
        cost_usd: null,
        error_rate: 0,
        p50_latency_ms: 20,
        missing_usage_calls: 4,
        unpriced_calls: 0,
        estimated_calls: 0,
      },
    ]);
  });

  it("sums ledger costs exactly (0.1 + 0.2 is 0.3, not 0.30000000000000004)", async () => {
    await seedLedger([
      { call_id: "sw_x:a:1:1", tenant: TENANT_U, model: "m-x", created_at: at("2025-06-01T00:00:00Z"), ...usage(1, 0, 1, 0), cost_usd: 0.1 },
      { call_id: "sw_x:b:1:1", tenant: TENANT_U, model: "m-x", created_at: at("2025-06-01T00:00:01Z"), ...usage(1, 0, 1, 0), cost_usd: 0.2 },
    ]);
    expect(0.1 + 0.2).not.toBe(0.3);
    const report = await readReport("?from=2025-06-01&to=2025-06-02");
    expect(report.totals.cost_usd).toBe(0.3);
  });

  it("answers an empty range with no rows and zero calls", async () => {
    const report = await readReport("?from=2001-01-01&to=2001-02-01");
    expect(report.rows).toEqual([]);
    expect(report.totals).toEqual({
      calls: 0,
      prompt_tokens: null,
      cached_tokens: null,
      completion_tokens: null,
      reasoning_tokens: null,
      total_tokens: null,
      cost_usd: null,
      error_rate: null,
      p50_latency_ms: null,
      missing_usage_calls: 0,
      unpriced_calls: 0,
      estimated_calls: 0,
    });
  });
});

describe("GET /v1/usage tenant isolation", () => {
  it("shows each token only its own tenant's calls", async () => {
    const mine = await readReport(`?${MARCH_RANGE}&group_by=swarm`);
    expect(mine.rows.map((r) => r.key)).toEqual(["sw_r1", "sw_r2"]);
    const theirs = await readReport(`?${MARCH_RANGE}&group_by=swarm`, TOKEN_V);
    expect(theirs.rows.map((r) => [r.key, r.calls, r.cost_usd])).toEqual([["sw_v1", 1, 64]]);
    expect(theirs.totals.calls).toBe(1);
    const token = await readReport(`?${MARCH_RANGE}&group_by=token`, TOKEN_V);
    expect(token.rows.map((r) => r.key)).toEqual([TENANT_V]);
  });

  it("is mounted on the real Worker entry and needs a token", async () => {
    const ok = await callApi("/v1/usage?from=2001-01-01&to=2001-01-02", { token: TOKEN_A });
    expect(ok.status).toBe(200);
    expect(ReportSchema.parse(await ok.json()).rows).toEqual([]);
    const anonymous = await callApi("/v1/usage", { token: null });
    expect(anonymous.status).toBe(401);
  });
});

describe("GET /v1/usage range", () => {
  it("defaults to the last 30 days up to now", async () => {
    const now = Date.now();
    await seedLedger([
      { call_id: "sw_d:recent:1:1", tenant: TENANT_V, model: "m-recent", created_at: now - 29 * DAY_MS, ...usage(7, 0, 3, 0), cost_usd: 0.5 },
      { call_id: "sw_d:old:1:1", tenant: TENANT_V, model: "m-old", created_at: now - 31 * DAY_MS, ...usage(7, 0, 3, 0), cost_usd: 0.5 },
    ]);
    const report = await readReport("", TOKEN_V);
    expect(report.group_by).toBe("model");
    expect(report.rows.map((r) => r.key)).toEqual(["m-recent"]);
    const span = Date.parse(report.to) - Date.parse(report.from);
    expect(span).toBe(30 * DAY_MS);
    expect(Date.parse(report.to)).toBeGreaterThanOrEqual(now);
  });

  it.each<[string, string, RegExp]>([
    ["from=2026-01-01&to=2026-01-01", "from", /before to/],
    ["from=2026-02-01&to=2026-01-01", "from", /before to/],
    ["from=2024-01-01&to=2025-01-02", "from", /367 days; at most 366/],
    ["from=2026-02-30", "from", /YYYY-MM-DD/],
    ["to=tomorrow", "to", /YYYY-MM-DD/],
    ["group_by=week", "group_by", /model, day, swarm, token/],
    ["groupBy=day", "groupBy", /unknown parameter/],
  ])("?%s → 400 invalid_request at %s", async (query, path, message) => {
    const response = await getUsage(`?${query}`);
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_request");
    expect(error.details.map((d) => d.path)).toEqual([path]);
    expect(error.details[0]?.message).toMatch(message);
  });
});

describe("GET /v1/usage: calls whose outcome was lost", () => {
  it("counts an `unknown` call in calls and its estimate in the sums, as estimated_calls, never as an error", async () => {
    await seedLedger([
      { call_id: "sw_lost:a:1:1", tenant: TENANT_V, swarm_id: "sw_lost", created_at: at("2025-06-01T10:00:00Z"), ...usage(10, 0, 5, 0), cost_usd: 0.1 },
      {
        call_id: "sw_lost:b:1:1",
        tenant: TENANT_V,
        swarm_id: "sw_lost",
        status: "unknown",
        created_at: at("2025-06-01T10:01:00Z"),
        ...usage(40, 0, 100, 0),
        cost_usd: 0.7,
      },
    ]);
    const report = await readReport("?from=2025-06-01&to=2025-06-02&group_by=swarm", TOKEN_V);
    expect(report.totals).toMatchObject({ calls: 2, estimated_calls: 1, error_rate: 0, prompt_tokens: 50, completion_tokens: 105 });
    expect(report.rows).toEqual([expect.objectContaining({ key: "sw_lost", estimated_calls: 1 })]);
  });
});
