import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  parseEffectivePrices,
  parseGatewayConfig,
  readAgentSettings,
  readBooleanSetting,
  readIntSetting,
  readJsonSetting,
  readListSetting,
  readOrchestratorSettings,
  DEFAULT_FILES_MAX_BYTES,
  readRoomSettings,
  readSecretSetting,
  readToolSettings,
  readUpstreamKeys,
  type IntRange,
} from "./env-settings.ts";
import { DEFAULT_PRICES } from "./pricing.ts";

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error("expected an error");
}

const multiVendor = {
  upstreams: {
    openai: { base_url: "https://api.openai.com/v1", keys: [{ id: "openai-a", rpm: 500 }] },
    moonshot: { base_url: "https://api.moonshot.ai/v1", keys: [{ id: "kimi-a" }] },
  },
  models: {
    "gpt-4.1": { upstream: "openai", tier: "premium" },
    "kimi-k2.5": { upstream: "moonshot", price: { input: 0.6, cached_input: 0.15, output: 2.5 } },
  },
};

describe("readIntSetting", () => {
  it.each<[string | undefined, IntRange, number]>([
    ["5", { min: 1, max: 10 }, 5],
    [" 10 ", { min: 1, max: 10 }, 10],
    ["1", { min: 1, max: 10 }, 1],
    ["0", { min: 0 }, 0],
    ["9007199254740991", { min: 0 }, Number.MAX_SAFE_INTEGER],
    [undefined, { min: 0, fallback: 30 }, 30],
    ["", { min: 0, fallback: 30 }, 30],
    ["  ", { min: 1, max: 5, fallback: 3 }, 3],
  ])("reads %j within %j as %d", (value, range, expected) => {
    expect(readIntSetting({ N: value }, "N", range)).toEqual({ ok: true, value: expected });
  });

  it.each<[string | undefined, IntRange, string]>([
    ["11", { min: 1, max: 10 }, 'N must be an integer from 1 to 10, got "11"'],
    ["0", { min: 1, max: 10 }, 'N must be an integer from 1 to 10, got "0"'],
    ["-1", { min: 0 }, 'N must be a non-negative integer, got "-1"'],
    ["1.5", { min: 0 }, 'N must be a non-negative integer, got "1.5"'],
    ["1e3", { min: 0 }, 'N must be a non-negative integer, got "1e3"'],
    ["0x10", { min: 0 }, 'N must be a non-negative integer, got "0x10"'],
    ["12abc", { min: 1 }, 'N must be an integer of at least 1, got "12abc"'],
    ["9007199254740992", { min: 1 }, 'N must be an integer of at least 1, got "9007199254740992"'],
    [undefined, { min: 1, max: 10 }, 'N must be an integer from 1 to 10, got ""'],
    ["", { min: 1 }, 'N must be an integer of at least 1, got ""'],
  ])("refuses %j within %j", (value, range, message) => {
    expect(readIntSetting({ N: value }, "N", range)).toEqual({ ok: false, error: message });
  });
});

describe("readBooleanSetting", () => {
  it.each<[string | undefined, boolean, boolean]>([
    [undefined, false, false],
    ["", true, true],
    ["true", false, true],
    [" TRUE ", false, true],
    ["False", true, false],
  ])("reads %j (fallback %j) as %j", (value, fallback, expected) => {
    expect(readBooleanSetting({ B: value }, "B", { fallback })).toEqual({ ok: true, value: expected });
  });

  it.each(["yes", "1", "on"])("refuses %j", (value) => {
    expect(readBooleanSetting({ B: value }, "B", { fallback: false })).toEqual({ ok: false, error: `B must be "true" or "false", got "${value}"` });
  });
});

describe("readSecretSetting and readListSetting", () => {
  it.each<[string | undefined, string | null]>([
    [undefined, null],
    ["   ", null],
    [" s3cret ", "s3cret"],
  ])("reads secret %j as %j", (value, expected) => {
    expect(readSecretSetting({ S: value }, "S")).toBe(expected);
  });

  it.each<[string | undefined, string[]]>([
    ["a,b", ["a", "b"]],
    ["  a , b ,, ", ["a", "b"]],
    ["", []],
    [undefined, []],
  ])("reads list %j as %j", (value, expected) => {
    expect(readListSetting({ L: value }, "L")).toEqual(expected);
  });
});

describe("readJsonSetting", () => {
  const Schema = z.strictObject({ size: z.number().int().positive() });

  it.each<[string | undefined, unknown]>([
    [undefined, "none"],
    [" ", "none"],
    ['{"size": 3}', { size: 3 }],
  ])("reads %j as %j", (value, expected) => {
    expect(readJsonSetting({ J: value }, "J", Schema, { blank: "none" })).toEqual({ ok: true, value: expected });
  });

  it.each([
    ["text that is not JSON", "{", "J is not valid JSON"],
    ["a value that breaks the schema, with its path", '{"size": -1}', "J: size: Too small: expected number to be >0"],
    ["an unknown key", '{"size": 1, "extra": 2}', 'J: (root): Unrecognized key: "extra"'],
  ])("refuses %s", (_label, value, message) => {
    expect(readJsonSetting({ J: value }, "J", Schema, { blank: null })).toEqual({ ok: false, error: message });
  });

  it.each(["{", '{"size": "sk-live-secret"}', '{"sk-live-secret": 1}'])("says only what a secret must be for %j, never its content", (value) => {
    const read = readJsonSetting({ J: value }, "J", Schema, { blank: null, secretFormat: "a JSON object with a size" });
    expect(read).toEqual({ ok: false, error: "J must be a JSON object with a size (its content is not shown)" });
  });
});

describe("GATEWAY_CONFIG, UPSTREAM_KEYS and the price table", () => {
  it("reads a blank GATEWAY_CONFIG as one upstream at the default base URL with the key `default`", () => {
    expect(parseGatewayConfig("  ", "https://api.example.com/v1")).toEqual({
      ok: true,
      value: { upstreams: { default: { base_url: "https://api.example.com/v1", keys: [{ id: "default" }] } }, models: {}, default_upstream: "default" },
    });
    expect(parseGatewayConfig(undefined, "ftp://nope").ok).toBe(false);
  });

  it.each([
    ["not JSON", "{", "GATEWAY_CONFIG is not valid JSON"],
    ["no upstream", JSON.stringify({ upstreams: {} }), "upstreams: configure at least one upstream"],
    ["a bad base_url", JSON.stringify({ upstreams: { a: { base_url: "ftp://x", keys: [{ id: "k" }] } } }), "upstreams.a.base_url"],
    [
      "an upstream without keys",
      JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [] } } }),
      "upstreams.a.keys: an upstream needs at least one key",
    ],
    [
      "a key id used twice",
      JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [{ id: "k" }] }, b: { base_url: "https://y", keys: [{ id: "k" }] } } }),
      'upstreams.b.keys.0.id: key id "k" is already used by upstream "a"',
    ],
    [
      "a model on an unknown upstream",
      JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [{ id: "k" }] } }, models: { m: { upstream: "b" } } }),
      'GATEWAY_CONFIG: models.m.upstream: unknown upstream "b" (configured: a)',
    ],
    ["a negative rpm", JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [{ id: "k", rpm: -1 }] } } }), "upstreams.a.keys.0.rpm"],
    ["an unknown field", JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [{ id: "k", secret: "sk-1" }] } } }), "upstreams.a.keys.0"],
  ])("refuses a GATEWAY_CONFIG with %s, naming where", (_label, text, fragment) => {
    const parsed = parseGatewayConfig(text, "http://unused");
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toContain(fragment);
  });

  it("reads key values from UPSTREAM_KEYS and never echoes them in an error", () => {
    expect(readUpstreamKeys({ UPSTREAM_KEYS: '{"ds-a":"sk-one","ds-b":"sk-two"}' })).toEqual({ ok: true, value: { "ds-a": "sk-one", "ds-b": "sk-two" } });
    expect(readUpstreamKeys({ UPSTREAM_KEYS: "" })).toEqual({ ok: true, value: {} });
    expect(readUpstreamKeys({})).toEqual({ ok: true, value: {} });
    for (const text of ['{"ds-a": 42, "leak": "sk-secret-value"}', '{"sk-secret-value": ""}', '{"ds-a": "sk-secret-value"']) {
      expect(readUpstreamKeys({ UPSTREAM_KEYS: text })).toEqual({
        ok: false,
        error: "UPSTREAM_KEYS must be a JSON object of key id → API key (its content is not shown)",
      });
    }
  });

  it("merges the gateway's model prices over MODEL_PRICES over the defaults", () => {
    const prices = parseEffectivePrices(JSON.stringify({ "kimi-k2.5": { output: 0.9 } }), JSON.stringify(multiVendor));
    if (!prices.ok) throw new Error(prices.error);
    expect(prices.value["kimi-k2.5"]).toEqual({ input: 0.6, cached_input: 0.15, output: 2.5 });
    expect(prices.value["deepseek-v3.2"]).toEqual({ input: 0.28, cached_input: 0.028, output: 0.42 });
    const noGateway = parseEffectivePrices(JSON.stringify({ "kimi-k2.5": { output: 0.9 } }), "");
    if (!noGateway.ok) throw new Error(noGateway.error);
    expect(noGateway.value["kimi-k2.5"]?.output).toBe(0.9);
  });

  it.each([
    ["MODEL_PRICES that is not JSON", "{", "", "MODEL_PRICES is not valid JSON"],
    ["a GATEWAY_CONFIG that is not JSON", "", "{", "GATEWAY_CONFIG is not valid JSON"],
  ])("refuses the price table for %s", (_label, modelPrices, gatewayConfig, fragment) => {
    const prices = parseEffectivePrices(modelPrices, gatewayConfig);
    expect(prices.ok).toBe(false);
    if (!prices.ok) expect(prices.error).toContain(fragment);
  });
});

describe("readRoomSettings", () => {
  it("reads unset settings as their defaults: 6 lane slots (header-bound until a lane measures), the built-in prices, no gateway, no tenant caps, 10 s leases (30 s grace), 1 s flushes, 10 s ticket deadlines", () => {
    expect(readRoomSettings({})).toEqual({
      laneSlots: 6,
      prices: DEFAULT_PRICES,
      gateway: null,
      tenantBudgets: {},
      leaseMs: 10_000,
      leaseGraceMs: 30_000,
      toolTurnLeaseMs: 30_000,
      flushMs: 1_000,
      batchFlushMs: 1_000,
      ticketPullDeadlineMs: 10_000,
    });
  });

  it("reads wrangler.toml's values and a configured gateway and tenant caps", () => {
    const settings = readRoomSettings({
      LANE_SLOTS: "128",
      MODEL_PRICES: "",
      GATEWAY_CONFIG: JSON.stringify(multiVendor),
      TENANT_BUDGETS: '{"tn_0123456789abcdef":{"max_usd_per_month":50},"*":{"max_tokens_per_month":1000000}}',
      LEASE_GRACE_S: "30",
      TOOL_TURN_LEASE_S: "0",
      LEDGER_FLUSH_MS: "50",
      BATCH_FLUSH_MS: "0",
    });
    expect(settings).toMatchObject({ laneSlots: 128, leaseGraceMs: 30_000, toolTurnLeaseMs: 0, flushMs: 50, batchFlushMs: 0 });
    expect(Object.keys(settings.gateway?.models ?? {})).toEqual(["gpt-4.1", "kimi-k2.5"]);
    expect(settings.prices["kimi-k2.5"]?.output).toBe(2.5);
    expect(settings.tenantBudgets).toEqual({ tn_0123456789abcdef: { max_usd_per_month: 50 }, "*": { max_tokens_per_month: 1_000_000 } });
  });

  it.each([
    ["7", 7],
    [" 12 ", 12],
    ["  ", 6],
    ["1000", 1_000],
  ])("reads LANE_SLOTS %j as %j", (value, laneSlots) => {
    expect(readRoomSettings({ LANE_SLOTS: value }).laneSlots).toBe(laneSlots);
  });

  it.each([
    ["a LANE_SLOTS of 0", { LANE_SLOTS: "0" }, 'LANE_SLOTS must be an integer from 1 to 1000, got "0"'],
    ["a LANE_SLOTS that is a word", { LANE_SLOTS: "auto" }, 'LANE_SLOTS must be an integer from 1 to 1000, got "auto"'],
    ["a negative LEASE_GRACE_S", { LEASE_GRACE_S: "-1" }, 'LEASE_GRACE_S must be a non-negative integer, got "-1"'],
    ["a fractional TOOL_TURN_LEASE_S", { TOOL_TURN_LEASE_S: "2.5" }, 'TOOL_TURN_LEASE_S must be a non-negative integer, got "2.5"'],
    ["an exponent LEDGER_FLUSH_MS", { LEDGER_FLUSH_MS: "1e3" }, 'LEDGER_FLUSH_MS must be a non-negative integer, got "1e3"'],
    ["a BATCH_FLUSH_MS past a minute", { BATCH_FLUSH_MS: "60001" }, 'BATCH_FLUSH_MS must be an integer from 0 to 60000, got "60001"'],
    ["a bad MODEL_PRICES", { MODEL_PRICES: '{"x": {"output": 1}}' }, 'MODEL_PRICES: model "x" field "input" is missing'],
    [
      "a TENANT_BUDGETS key that is no tenant id",
      { TENANT_BUDGETS: '{"team-a":{"max_usd_per_month":1}}' },
      'TENANT_BUDGETS: team-a: "team-a" is not a tenant id',
    ],
    ["an empty tenant cap", { TENANT_BUDGETS: '{"*":{}}' }, "TENANT_BUDGETS: *: give max_usd_per_month or max_tokens_per_month"],
    ["a negative tenant cap", { TENANT_BUDGETS: '{"*":{"max_usd_per_month":-1}}' }, "TENANT_BUDGETS: *.max_usd_per_month"],
    ["a TENANT_BUDGETS that is not JSON", { TENANT_BUDGETS: "{" }, "TENANT_BUDGETS is not valid JSON"],
  ])("refuses %s", (_label, env, fragment) => {
    const message = errorOf(() => readRoomSettings(env));
    expect(message).toMatch(/^invalid SwarmRoom settings: /);
    expect(message).toContain(fragment);
  });

  it("names every bad setting at once, a bad GATEWAY_CONFIG once (though the prices need it too)", () => {
    const message = errorOf(() => readRoomSettings({ GATEWAY_CONFIG: "{", LEASE_GRACE_S: "soon", LEDGER_FLUSH_MS: "-5" }));
    expect(message).toBe(
      'invalid SwarmRoom settings: GATEWAY_CONFIG is not valid JSON; LEASE_GRACE_S must be a non-negative integer, got "soon"; LEDGER_FLUSH_MS must be a non-negative integer, got "-5"',
    );
  });
});

describe("readOrchestratorSettings", () => {
  it("reads the request settings, and the prices, gateway and tenant caps as results of their own", () => {
    const settings = readOrchestratorSettings({ MAX_BODY_BYTES: "8388608", API_TOKENS: " a, b ", ALLOW_PRIVATE_NETWORK: "false", WEBHOOK_SECRET: " whsec " });
    expect(settings.config).toEqual({
      maxBodyBytes: 8_388_608,
      filesMaxBytes: DEFAULT_FILES_MAX_BYTES,
      apiTokens: ["a", "b"],
      allowPrivateNetwork: false,
      webhookSecret: "whsec",
      secretsKey: null,
      apiKeyKind: "live",
    });
    expect(settings.prices).toEqual({ ok: true, value: DEFAULT_PRICES });
    expect(settings.gateway).toEqual({ ok: true, value: null });
    expect(settings.tenantBudgets).toEqual({ ok: true, value: {} });
  });

  it("keeps a bad MODEL_PRICES, GATEWAY_CONFIG or TENANT_BUDGETS to its own result, so only the routes that need it fail", () => {
    const settings = readOrchestratorSettings({ MAX_BODY_BYTES: "10", MODEL_PRICES: "{", GATEWAY_CONFIG: "[]", TENANT_BUDGETS: '{"*":{}}' });
    expect(settings.config.maxBodyBytes).toBe(10);
    expect(readOrchestratorSettings({ MAX_BODY_BYTES: "10", FILES_MAX_BYTES: "2048" }).config.filesMaxBytes).toBe(2_048);
    expect(settings.prices.ok).toBe(false);
    expect(settings.gateway).toMatchObject({ ok: false, error: expect.stringContaining("GATEWAY_CONFIG: (root)") });
    expect(settings.tenantBudgets).toMatchObject({ ok: false, error: expect.stringContaining("TENANT_BUDGETS: *") });
  });

  it.each([
    [{ MAX_BODY_BYTES: "" }, 'MAX_BODY_BYTES must be an integer of at least 1, got ""'],
    [{ MAX_BODY_BYTES: "0" }, 'MAX_BODY_BYTES must be an integer of at least 1, got "0"'],
    [{ MAX_BODY_BYTES: "1e6" }, 'MAX_BODY_BYTES must be an integer of at least 1, got "1e6"'],
    [{ MAX_BODY_BYTES: "10", FILES_MAX_BYTES: "0" }, 'FILES_MAX_BYTES must be an integer of at least 1, got "0"'],
    [{ MAX_BODY_BYTES: "10", ALLOW_PRIVATE_NETWORK: "yes" }, 'ALLOW_PRIVATE_NETWORK must be "true" or "false", got "yes"'],
    [{ MAX_BODY_BYTES: "10", API_KEY_KIND: "test" }, 'API_KEY_KIND must be "live" or "local", got "test"'],
  ])("refuses %j", (env, fragment) => {
    expect(errorOf(() => readOrchestratorSettings(env))).toBe(`invalid orchestrator settings: ${fragment}`);
  });

  it("never shows the tokens or the webhook secret (they are never refused)", () => {
    const message = errorOf(() => readOrchestratorSettings({ MAX_BODY_BYTES: "x", API_TOKENS: "tok-secret", WEBHOOK_SECRET: "whsec-secret" }));
    expect(message).not.toContain("tok-secret");
    expect(message).not.toContain("whsec-secret");
  });
});

describe("readAgentSettings and readToolSettings", () => {
  const agent = { AGENT_CONCURRENCY: "128", INLINE_RETRY_MAX_S: "2", PERMIT_WAIT_MAX_S: "20" };
  const tools = { HTTP_FETCH_TIMEOUT_S: "10", HTTP_FETCH_MAX_BYTES: "262144", WEBHOOK_TIMEOUT_S: "15", ALLOW_PRIVATE_NETWORK: "false" };

  it("reads the agent's wrangler.toml values", () => {
    expect(readAgentSettings(agent)).toEqual({
      concurrency: 128,
      inlineRetryMaxS: 2,
      permitWaitMaxS: 20,
      headerSlots: 6,
      pullForS: 300,
      maxTasksPerInvocation: 10_000,
      laneHost: "executor",
    });
    expect(
      readAgentSettings({ ...agent, UPSTREAM_HEADER_SLOTS: "0", AGENT_PULL_FOR_S: "60", AGENT_MAX_TASKS_PER_INVOCATION: "100", AGENT_LANE_HOST: " consumer " }),
    ).toMatchObject({
      headerSlots: 0,
      pullForS: 60,
      maxTasksPerInvocation: 100,
      laneHost: "consumer",
    });
  });

  it.each(["executors", "queue", "CONSUMER", "1"])("refuses AGENT_LANE_HOST %j, naming the choices", (value) => {
    expect(() => readAgentSettings({ ...agent, AGENT_LANE_HOST: value })).toThrow(/AGENT_LANE_HOST must be one of "executor", "consumer"/);
  });

  it("reads the tool settings", () => {
    expect(readToolSettings(tools)).toEqual({
      httpTimeoutMs: 10_000,
      httpMaxBytes: 262_144,
      webhookTimeoutMs: 15_000,
      webhookSecret: null,
      allowPrivate: false,
      secretsKey: null,
    });
    expect(readToolSettings({ ...tools, ALLOW_PRIVATE_NETWORK: " True ", WEBHOOK_SECRET: " whsec ", SECRETS_KEY: " sk " })).toMatchObject({
      allowPrivate: true,
      webhookSecret: "whsec",
      secretsKey: "sk",
    });
  });

  it.each([
    ["AGENT_CONCURRENCY", "0", "AGENT_CONCURRENCY must be an integer from 1 to 1000"],
    ["AGENT_CONCURRENCY", "1001", "AGENT_CONCURRENCY must be an integer from 1 to 1000"],
    ["INLINE_RETRY_MAX_S", "31", "INLINE_RETRY_MAX_S must be an integer from 0 to 30"],
    ["PERMIT_WAIT_MAX_S", "", "PERMIT_WAIT_MAX_S must be an integer from 0 to 120"],
    ["UPSTREAM_HEADER_SLOTS", "-1", "UPSTREAM_HEADER_SLOTS must be an integer from 0 to 1000"],
    ["AGENT_PULL_FOR_S", "0", "AGENT_PULL_FOR_S must be an integer from 1 to 600"],
    ["AGENT_PULL_FOR_S", "900", "AGENT_PULL_FOR_S must be an integer from 1 to 600"],
    ["AGENT_MAX_TASKS_PER_INVOCATION", "many", "AGENT_MAX_TASKS_PER_INVOCATION must be an integer from 1 to 1000000"],
  ])("refuses %s %j", (name, value, fragment) => {
    expect(errorOf(() => readAgentSettings({ ...agent, [name]: value }))).toBe(`invalid agent settings: ${fragment}, got ${JSON.stringify(value)}`);
  });

  it.each([
    ["HTTP_FETCH_TIMEOUT_S", "121", 'HTTP_FETCH_TIMEOUT_S must be an integer from 1 to 120, got "121"'],
    ["HTTP_FETCH_MAX_BYTES", "1023", 'HTTP_FETCH_MAX_BYTES must be an integer from 1024 to 10485760, got "1023"'],
    ["HTTP_FETCH_MAX_BYTES", "10485761", 'HTTP_FETCH_MAX_BYTES must be an integer from 1024 to 10485760, got "10485761"'],
    ["WEBHOOK_TIMEOUT_S", "0", 'WEBHOOK_TIMEOUT_S must be an integer from 1 to 120, got "0"'],
    ["ALLOW_PRIVATE_NETWORK", "maybe", 'ALLOW_PRIVATE_NETWORK must be "true" or "false", got "maybe"'],
  ])("refuses %s %j", (name, value, fragment) => {
    expect(errorOf(() => readToolSettings({ ...tools, [name]: value }))).toBe(`invalid agent tool settings: ${fragment}`);
  });

  it("names every bad agent setting at once", () => {
    expect(errorOf(() => readAgentSettings({ AGENT_CONCURRENCY: "lots", INLINE_RETRY_MAX_S: "2" }))).toBe(
      'invalid agent settings: AGENT_CONCURRENCY must be an integer from 1 to 1000, got "lots"; PERMIT_WAIT_MAX_S must be an integer from 0 to 120, got ""',
    );
  });
});
