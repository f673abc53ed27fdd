// The gateway configuration: OpenAI-compatible upstreams with their key pools, and the models
// served through them (upstream, upstream model id, price, context size, tier), and where a model's
// calls go. The GATEWAY_CONFIG var is read by env-settings.ts; key *values* never appear here, only
// the ids under which the UPSTREAM_KEYS secret holds them. No I/O.
import { z } from "zod";
import { ModelPriceSchema, type ModelPrice, type PriceTable } from "./pricing.ts";

const IdSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "ids are 1-64 letters, digits, '.', '_' or '-'");

export const UpstreamKeySchema = z.strictObject({
  /** Names the key in the UPSTREAM_KEYS secret and shards its KeyPool Durable Object. */
  id: IdSchema,
  rpm: z.number().int().positive().optional(),
  tpm: z.number().int().positive().optional(),
  max_in_flight: z.number().int().positive().optional(),
});
export type UpstreamKey = z.infer<typeof UpstreamKeySchema>;

export const UpstreamSchema = z.strictObject({
  base_url: z.url({ protocol: /^https?$/, error: "base_url must be an http(s) URL, e.g. https://api.openai.com/v1" }),
  keys: z.array(UpstreamKeySchema).min(1, "an upstream needs at least one key"),
});
export type Upstream = z.infer<typeof UpstreamSchema>;

export const GatewayModelSchema = z.strictObject({
  upstream: IdSchema,
  /** The model id the upstream expects (e.g. `deepseek-chat` for `deepseek-v3.2`); default: the name. */
  id: z.string().min(1).max(200).optional(),
  price: ModelPriceSchema.optional(),
  /** Context window in tokens, for planning and reduction. */
  context: z.number().int().positive().optional(),
  /** A label such as `premium` or `economy`. */
  tier: z.string().min(1).max(32).optional(),
});
export type GatewayModel = z.infer<typeof GatewayModelSchema>;

export const GatewayConfigSchema = z
  .strictObject({
    upstreams: z.record(IdSchema, UpstreamSchema).refine((u) => Object.keys(u).length > 0, "configure at least one upstream"),
    models: z.record(z.string().min(1).max(200), GatewayModelSchema).default({}),
    /** Where a model not listed under `models` goes (with its own name as the upstream id); unset = refused. */
    default_upstream: IdSchema.optional(),
  })
  .superRefine((config, ctx) => {
    const seen = new Map<string, string>();
    for (const [name, upstream] of Object.entries(config.upstreams)) {
      upstream.keys.forEach((key, i) => {
        const other = seen.get(key.id);
        if (other !== undefined)
          ctx.addIssue({ code: "custom", path: ["upstreams", name, "keys", i, "id"], message: `key id "${key.id}" is already used by upstream "${other}"` });
        seen.set(key.id, name);
      });
    }
    for (const [name, model] of Object.entries(config.models)) {
      if (!(model.upstream in config.upstreams)) {
        ctx.addIssue({
          code: "custom",
          path: ["models", name, "upstream"],
          message: `unknown upstream "${model.upstream}" (configured: ${Object.keys(config.upstreams).join(", ")})`,
        });
      }
    }
    if (config.default_upstream !== undefined && !(config.default_upstream in config.upstreams)) {
      ctx.addIssue({ code: "custom", path: ["default_upstream"], message: `unknown upstream "${config.default_upstream}"` });
    }
  });
export type GatewayConfig = z.infer<typeof GatewayConfigSchema>;

export interface ModelRoute {
  upstream: string;
  baseUrl: string;
  /** The id to send as `model`. */
  upstreamModel: string;
  keys: UpstreamKey[];
}

/** Where a model's calls go; null when the gateway serves no such model. */
export function resolveModelRoute(config: GatewayConfig, model: string): ModelRoute | null {
  const entry = config.models[model];
  const upstreamName = entry?.upstream ?? config.default_upstream;
  if (upstreamName === undefined) return null;
  const upstream = config.upstreams[upstreamName];
  if (upstream === undefined) return null;
  return { upstream: upstreamName, baseUrl: upstream.base_url, upstreamModel: entry?.id ?? model, keys: upstream.keys };
}

/** The price table with the gateway's model prices merged over it. */
export function withGatewayPrices(table: PriceTable, config: GatewayConfig): PriceTable {
  const merged: Record<string, ModelPrice> = { ...table };
  for (const [name, model] of Object.entries(config.models)) if (model.price) merged[name] = model.price;
  return merged;
}

/** The UPSTREAM_KEYS secret: a JSON object of key id → API key. */
export const UpstreamKeysSchema = z.record(z.string(), z.string().min(1));
