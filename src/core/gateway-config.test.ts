import { describe, expect, it } from "vitest";
import { parseEffectivePrices, parseGatewayConfig, parseUpstreamKeys, resolveModelRoute } from "./gateway-config.ts";

const multiVendor = {
  upstreams: {
    openai: { base_url: "https://api.openai.com/v1", keys: [{ id: "openai-a", rpm: 500, tpm: 200_000, max_in_flight: 64 }] },
    deepseek: { base_url: "https://api.deepseek.com/v1", keys: [{ id: "ds-a", rpm: 300 }, { id: "ds-b", rpm: 300 }] },
    moonshot: { base_url: "https://api.moonshot.ai/v1", keys: [{ id: "kimi-a" }] },
  },
  models: {
    "gpt-4.1": { upstream: "openai", tier: "premium", context: 1_047_576 },
    "deepseek-v3.2": { upstream: "deepseek", id: "deepseek-chat", tier: "economy" },
    "kimi-k2.5": { upstream: "moonshot", id: "kimi-k2.5", price: { input: 0.6, cached_input: 0.15, output: 2.5 } },
  },
};

describe("gateway config", () => {
  it("parses a multi-vendor setup and routes each model to its upstream, keys and upstream id", () => {
    const parsed = parseGatewayConfig(JSON.stringify(multiVendor), "http://unused");
    if (!parsed.ok) throw new Error(parsed.error);
    expect(resolveModelRoute(parsed.value, "deepseek-v3.2")).toEqual({
      upstream: "deepseek",
      baseUrl: "https://api.deepseek.com/v1",
      upstreamModel: "deepseek-chat",
      keys: [{ id: "ds-a", rpm: 300 }, { id: "ds-b", rpm: 300 }],
    });
    expect(resolveModelRoute(parsed.value, "gpt-4.1")?.upstreamModel).toBe("gpt-4.1");
    expect(resolveModelRoute(parsed.value, "llama-3")).toBeNull();
  });

  it("defaults to one upstream serving every model by name when GATEWAY_CONFIG is blank", () => {
    const parsed = parseGatewayConfig("  ", "https://api.example.com/v1");
    if (!parsed.ok) throw new Error(parsed.error);
    expect(resolveModelRoute(parsed.value, "anything")).toEqual({
      upstream: "default",
      baseUrl: "https://api.example.com/v1",
      upstreamModel: "anything",
      keys: [{ id: "default" }],
    });
  });

  it.each([
    ["not JSON", "{", "GATEWAY_CONFIG is not valid JSON"],
    ["no upstream", JSON.stringify({ upstreams: {} }), "upstreams: configure at least one upstream"],
    ["a bad base_url", JSON.stringify({ upstreams: { a: { base_url: "ftp://x", keys: [{ id: "k" }] } } }), "upstreams.a.base_url"],
    ["an upstream without keys", JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [] } } }), "upstreams.a.keys: an upstream needs at least one key"],
    [
      "a key id used twice",
      JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [{ id: "k" }] }, b: { base_url: "https://y", keys: [{ id: "k" }] } } }),
      'upstreams.b.keys.0.id: key id "k" is already used by upstream "a"',
    ],
    [
      "a model on an unknown upstream",
      JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [{ id: "k" }] } }, models: { m: { upstream: "b" } } }),
      'models.m.upstream: unknown upstream "b" (configured: a)',
    ],
    ["a negative rpm", JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [{ id: "k", rpm: -1 }] } } }), "upstreams.a.keys.0.rpm"],
    ["an unknown field", JSON.stringify({ upstreams: { a: { base_url: "https://x", keys: [{ id: "k", secret: "sk-1" }] } } }), "upstreams.a.keys.0"],
  ])("refuses %s, naming where", (_label, text, fragment) => {
    const parsed = parseGatewayConfig(text, "http://unused");
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toContain(fragment);
  });

  it("reads key values from UPSTREAM_KEYS and never echoes them in an error", () => {
    expect(parseUpstreamKeys('{"ds-a":"sk-one","ds-b":"sk-two"}')).toEqual({ ok: true, value: { "ds-a": "sk-one", "ds-b": "sk-two" } });
    expect(parseUpstreamKeys("")).toEqual({ ok: true, value: {} });
    const bad = parseUpstreamKeys('{"ds-a": 42, "leak": "sk-secret-value"}');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).not.toContain("sk-secret-value");
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
});
