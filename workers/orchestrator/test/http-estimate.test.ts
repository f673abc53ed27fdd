// HTTP: POST /v1/swarms/estimate and POST /v1/swarms?dry_run=1: hand-computed ranges for a known
// spec, mixes, unpriced models, MODEL_PRICES, projections, validation paths, and that a dry run starts nothing.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createApp } from "../app.ts";
import { callApi, TOKEN_A, validSpec } from "./call-api.ts";
import { readErrorBody } from "./error-body.ts";

const RangeSchema = z.strictObject({ min: z.number(), max: z.number() });
const PriceSchema = z.strictObject({ input: z.number(), cached_input: z.number(), output: z.number() });
const EstimateSchema = z.strictObject({
  tasks: z.number(),
  calls: RangeSchema,
  tokens: z.strictObject({ prompt: RangeSchema, completion: RangeSchema, total: RangeSchema }),
  cost_usd: RangeSchema.nullable(),
  by_model: z.array(
    z.strictObject({ model: z.string(), weight: z.number(), share: z.number(), price: PriceSchema.nullable(), cost_usd: RangeSchema.nullable() }),
  ),
  compare_models: z.array(z.strictObject({ model: z.string(), price: PriceSchema, cost_usd: RangeSchema, monthly_cost_usd: RangeSchema.optional() })),
  budget: z.strictObject({ max_usd: z.number().optional(), max_tokens: z.number().optional(), fits: z.enum(["always", "maybe", "unlikely"]) }).optional(),
  assumptions: z.array(z.string()).min(1),
  projection: z
    .strictObject({
      jobs_per_day: z.number(),
      days_per_month: z.number(),
      jobs_per_month: z.number(),
      tokens_per_month: RangeSchema,
      monthly_cost_usd: RangeSchema.nullable(),
      by_model: z.array(z.strictObject({ model: z.string(), monthly_cost_usd: RangeSchema.nullable() })),
    })
    .optional(),
});
type Estimate = z.infer<typeof EstimateSchema>;

const usd = (pico: number) => pico / 1e12;

/**
 * Computed by hand with ceil(chars / 4) + 4 tokens per message:
 * system "You review code." (16 chars) = 8; "Audit auth.py." (14) = 8; "Audit db.py, then api.py." (25) = 11.
 * Per call 16 and 19 prompt tokens: 35 per job. 2 tasks × 3 attempts; answers of 1 to 100 tokens.
 * mock-1 costs $0.1 / $0.4 per MTok = 100,000 / 400,000 picodollars per token.
 */
const KNOWN_SPEC = {
  name: "known",
  model: "mock-1",
  system: "You review code.",
  tasks: [
    { id: "auth", prompt: "Audit auth.py." },
    { id: "db", prompt: "Audit db.py, then api.py." },
  ],
  limits: { max_output_tokens: 100, max_attempts: 3 },
};
const KNOWN_COST = { min: usd(35 * 100_000 + 2 * 400_000), max: usd(105 * 100_000 + 600 * 400_000) };

async function estimate(body: unknown, path = "/v1/swarms/estimate"): Promise<Estimate> {
  const response = await callApi(path, { json: body });
  expect(response.status).toBe(200);
  return EstimateSchema.parse(await response.json());
}

async function listSwarmIds(): Promise<string[]> {
  const response = await callApi("/v1/swarms?limit=100");
  expect(response.status).toBe(200);
  return z
    .object({ swarms: z.array(z.object({ id: z.string() })) })
    .parse(await response.json())
    .swarms.map((s) => s.id);
}

async function countSwarmRows(): Promise<number> {
  const row = await env.LEDGER_DB.prepare("SELECT COUNT(*) AS n FROM swarms").first();
  return z.object({ n: z.number() }).parse(row).n;
}

describe("POST /v1/swarms/estimate", () => {
  it("answers the hand-computed calls, tokens and cost of a known spec", async () => {
    const body = await estimate(KNOWN_SPEC);
    expect(body.tasks).toBe(2);
    expect(body.calls).toEqual({ min: 2, max: 6 });
    expect(body.tokens).toEqual({ prompt: { min: 35, max: 105 }, completion: { min: 2, max: 600 }, total: { min: 37, max: 705 } });
    expect(body.cost_usd).toEqual(KNOWN_COST);
    expect(body.cost_usd).toEqual({ min: 0.0000043, max: 0.0002505 });
    expect(body.by_model).toEqual([{ model: "mock-1", weight: 1, share: 1, price: { input: 0.1, cached_input: 0.01, output: 0.4 }, cost_usd: KNOWN_COST }]);
    expect(body).not.toHaveProperty("projection");
  });

  it("compares the spec on every model of the price table, cheapest worst case first", async () => {
    const body = await estimate(KNOWN_SPEC);
    // The project's GATEWAY_CONFIG prices one more model, "mock-economy" (vitest.config.ts): the
    // table is the defaults with the gateway's prices merged in.
    expect(body.compare_models.map((m) => m.model)).toEqual([
      "mock-economy",
      "mock-1",
      "deepseek-v3.2",
      "kimi-k2.5",
      "gemini-2.5-flash",
      "gpt-4.1",
      "claude-sonnet-4.5",
    ]);
    const claude = body.compare_models.at(-1);
    expect(claude?.cost_usd).toEqual({ min: usd(35 * 3_000_000 + 2 * 15_000_000), max: usd(105 * 3_000_000 + 600 * 15_000_000) });
  });

  it("projects a month from jobs_per_day (days_per_month defaults to 30)", async () => {
    const body = await estimate({ ...KNOWN_SPEC, projection: { jobs_per_day: 24 } });
    expect(body.projection).toEqual({
      jobs_per_day: 24,
      days_per_month: 30,
      jobs_per_month: 720,
      tokens_per_month: { min: 37 * 720, max: 705 * 720 },
      monthly_cost_usd: { min: usd(4_300_000 * 720), max: usd(250_500_000 * 720) },
      by_model: [{ model: "mock-1", monthly_cost_usd: { min: usd(4_300_000 * 720), max: usd(250_500_000 * 720) } }],
    });
    expect(body.compare_models.find((m) => m.model === "gpt-4.1")?.monthly_cost_usd).toEqual({
      min: usd((35 * 2_000_000 + 2 * 8_000_000) * 720),
      max: usd((105 * 2_000_000 + 600 * 8_000_000) * 720),
    });
  });

  it("prices each model's share of a weighted mix", async () => {
    const body = await estimate({
      ...KNOWN_SPEC,
      model: [
        { model: "deepseek-v3.2", weight: 60 },
        { model: "kimi-k2.5", weight: 30 },
        { model: "claude-sonnet-4.5", weight: 10 },
      ],
    });
    // Whole-spec picodollars per model × share; shares 0.6, 0.3, 0.1.
    const deepseek = { min: (35 * 280_000 + 2 * 420_000) * 0.6, max: (105 * 280_000 + 600 * 420_000) * 0.6 };
    const kimi = { min: (35 * 150_000 + 2 * 600_000) * 0.3, max: (105 * 150_000 + 600 * 600_000) * 0.3 };
    const claude = { min: (35 * 3_000_000 + 2 * 15_000_000) * 0.1, max: (105 * 3_000_000 + 600 * 15_000_000) * 0.1 };
    expect([deepseek, kimi, claude]).toEqual([
      { min: 6_384_000, max: 168_840_000 },
      { min: 1_935_000, max: 112_725_000 },
      { min: 13_500_000, max: 931_500_000 },
    ]);
    expect(body.by_model.map((m) => [m.model, m.share, m.cost_usd])).toEqual([
      ["deepseek-v3.2", 0.6, { min: usd(6_384_000), max: usd(168_840_000) }],
      ["kimi-k2.5", 0.3, { min: usd(1_935_000), max: usd(112_725_000) }],
      ["claude-sonnet-4.5", 0.1, { min: usd(13_500_000), max: usd(931_500_000) }],
    ]);
    expect(body.cost_usd).toEqual({ min: usd(6_384_000 + 1_935_000 + 13_500_000), max: usd(168_840_000 + 112_725_000 + 931_500_000) });
  });

  it("answers null cost for an unpriced model and says why", async () => {
    const body = await estimate({ ...KNOWN_SPEC, model: "in-house-llm" });
    expect(body.cost_usd).toBeNull();
    expect(body.by_model).toEqual([{ model: "in-house-llm", weight: 1, share: 1, price: null, cost_usd: null }]);
    expect(body.assumptions.some((a) => a.includes('"in-house-llm" has no price'))).toBe(true);
    // Tokens do not need a price.
    expect(body.tokens.total).toEqual({ min: 37, max: 705 });
  });

  it("says whether a budget can stop the swarm", async () => {
    const fits = await estimate({ ...KNOWN_SPEC, budget: { max_usd: 5 } });
    expect(fits.budget).toEqual({ max_usd: 5, fits: "always" });
    const short = await estimate({ ...KNOWN_SPEC, budget: { max_tokens: 30 } });
    expect(short.budget).toEqual({ max_tokens: 30, fits: "unlikely" });
  });

  it("uses MODEL_PRICES from the Worker's configuration", async () => {
    const response = await createApp().request(
      "/v1/swarms/estimate",
      {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN_A}`, "content-type": "application/json" },
        body: JSON.stringify({ ...KNOWN_SPEC, model: "in-house-llm" }),
      },
      { ...env, MODEL_PRICES: '{"in-house-llm": {"input": 1, "cached_input": 0.1, "output": 2}}' },
    );
    expect(response.status).toBe(200);
    const body = EstimateSchema.parse(await response.json());
    expect(body.cost_usd).toEqual({ min: usd(35 * 1_000_000 + 2 * 2_000_000), max: usd(105 * 1_000_000 + 600 * 2_000_000) });
    expect(body.compare_models.map((m) => m.model)).toContain("in-house-llm");
  });

  it("answers 500 without internals when MODEL_PRICES is broken, while other routes keep working", async () => {
    const app = createApp();
    const broken = { ...env, MODEL_PRICES: "{not json" };
    const headers = { authorization: `Bearer ${TOKEN_A}`, "content-type": "application/json" };
    const response = await app.request("/v1/swarms/estimate", { method: "POST", headers, body: JSON.stringify(KNOWN_SPEC) }, broken);
    expect(response.status).toBe(500);
    const error = await readErrorBody(response);
    expect(error.code).toBe("internal");
    expect(error.message).not.toContain("MODEL_PRICES");
    const list = await app.request("/v1/swarms", { headers }, broken);
    expect(list.status).toBe(200);
  });

  it.each<[string, string[], unknown]>([
    ["an empty prompt", ["tasks.0.prompt"], { ...KNOWN_SPEC, tasks: [{ prompt: "" }] }],
    ["a missing name", ["name"], { model: "mock-1", tasks: [{ prompt: "x" }] }],
    ["an unknown key", ["(root)"], { ...KNOWN_SPEC, dry_run: true }],
    ["max_attempts 0", ["limits.max_attempts"], { ...KNOWN_SPEC, limits: { max_attempts: 0 } }],
    ["a mix weight of 0", ["model.0.weight"], { ...KNOWN_SPEC, model: [{ model: "mock-1", weight: 0 }] }],
    ["jobs_per_day missing", ["projection.jobs_per_day"], { ...KNOWN_SPEC, projection: { days_per_month: 30 } }],
    ["spec and projection both wrong", ["name", "projection.jobs_per_day"], { ...KNOWN_SPEC, name: "", projection: { jobs_per_day: -1 } }],
  ])("%s → 400 invalid_spec naming %j", async (_case, paths, body) => {
    const response = await callApi("/v1/swarms/estimate", { json: body });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_spec");
    for (const path of paths) expect(error.details.map((d) => d.path)).toContain(path);
  });

  it("is not taken for a swarm id: GET /v1/swarms/estimate is an unknown swarm", async () => {
    const response = await callApi("/v1/swarms/estimate");
    expect(response.status).toBe(404);
    expect((await readErrorBody(response)).code).toBe("not_found");
  });

  it("needs a token", async () => {
    const response = await callApi("/v1/swarms/estimate", { json: KNOWN_SPEC, token: null });
    expect(response.status).toBe(401);
  });
});

describe("POST /v1/swarms?dry_run=1", () => {
  it("answers 200 with the same estimate as /estimate and starts nothing", async () => {
    const idsBefore = await listSwarmIds();
    const rowsBefore = await countSwarmRows();
    const response = await callApi("/v1/swarms?dry_run=1", { json: KNOWN_SPEC });
    expect(response.status).toBe(200);
    expect(response.headers.get("location")).toBeNull();
    const body = EstimateSchema.parse(await response.json());
    expect(body).toEqual(await estimate(KNOWN_SPEC));
    expect(await listSwarmIds()).toEqual(idsBefore);
    expect(await countSwarmRows()).toBe(rowsBefore);
  });

  it("takes the projection from the query", async () => {
    const body = await estimate(KNOWN_SPEC, "/v1/swarms?dry_run=true&jobs_per_day=0.5&days_per_month=20");
    expect(body.projection?.jobs_per_month).toBe(10);
    expect(body.projection?.monthly_cost_usd).toEqual({ min: usd(4_300_000 * 10), max: usd(250_500_000 * 10) });
  });

  it("still starts a swarm without dry_run (and with dry_run=0)", async () => {
    const before = await countSwarmRows();
    for (const path of ["/v1/swarms", "/v1/swarms?dry_run=0"]) {
      const response = await callApi(path, { json: validSpec() });
      expect(response.status).toBe(202);
    }
    expect(await countSwarmRows()).toBe(before + 2);
  });

  it.each<[string, string]>([
    ["dryrun=1", "(root)"], // a misspelt dry_run must not start a swarm
    ["dry_run=yes", "dry_run"],
    ["jobs_per_day=24", "jobs_per_day"],
    ["dry_run=1&days_per_month=30", "jobs_per_day"],
    ["dry_run=1&jobs_per_day=0", "jobs_per_day"],
    ["dry_run=1&jobs_per_day=1e3", "jobs_per_day"],
    ["dry_run=1&jobs_per_day=1&days_per_month=32", "days_per_month"],
  ])("?%s → 400 invalid_request at %s, and nothing starts", async (query, path) => {
    const before = await countSwarmRows();
    const response = await callApi(`/v1/swarms?${query}`, { json: KNOWN_SPEC });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_request");
    expect(error.details.map((d) => d.path)).toEqual([path]);
    expect(await countSwarmRows()).toBe(before);
  });

  it("validates the spec exactly as a real start does", async () => {
    const response = await callApi("/v1/swarms?dry_run=1", { json: { ...KNOWN_SPEC, tasks: [{ prompt: "a" }, { prompt: "" }] } });
    expect(response.status).toBe(400);
    const error = await readErrorBody(response);
    expect(error.code).toBe("invalid_spec");
    expect(error.details.map((d) => d.path)).toEqual(["tasks.1.prompt"]);
  });
});
