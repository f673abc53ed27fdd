import { describe, expect, it } from "vitest";
import { parseGatewayConfig } from "./env-settings.ts";
import { resolveModelRoute } from "./gateway-config.ts";

const multiVendor = {
  upstreams: {
    openai: { base_url: "https://api.openai.com/v1", keys: [{ id: "openai-a", rpm: 500, tpm: 200_000, max_in_flight: 64 }] },
    deepseek: {
      base_url: "https://api.deepseek.com/v1",
      keys: [
        { id: "ds-a", rpm: 300 },
        { id: "ds-b", rpm: 300 },
      ],
    },
    moonshot: { base_url: "https://api.moonshot.ai/v1", keys: [{ id: "kimi-a" }] },
  },
  models: {
    "gpt-4.1": { upstream: "openai", tier: "premium", context: 1_047_576 },
    "deepseek-v3.2": { upstream: "deepseek", id: "deepseek-chat", tier: "economy" },
    "kimi-k2.5": { upstream: "moonshot", id: "kimi-k2.5", price: { input: 0.6, cached_input: 0.15, output: 2.5 } },
  },
};

describe("resolveModelRoute", () => {
  it("parses a multi-vendor setup and routes each model to its upstream, keys and upstream id", () => {
    const parsed = parseGatewayConfig(JSON.stringify(multiVendor), "http://unused");
    if (!parsed.ok) throw new Error(parsed.error);
    expect(resolveModelRoute(parsed.value, "deepseek-v3.2")).toEqual({
      upstream: "deepseek",
      baseUrl: "https://api.deepseek.com/v1",
      upstreamModel: "deepseek-chat",
      keys: [
        { id: "ds-a", rpm: 300 },
        { id: "ds-b", rpm: 300 },
      ],
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
});
