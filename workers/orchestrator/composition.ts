// The orchestrator's composition root: the only module that reads `env`. It parses the settings and
// builds each adapter from the one binding it needs; handlers and cron receive the result.
import { z } from "zod";
import type { AdmissionContext } from "../../src/core/admit-swarm.ts";
import { newScheduleId, newSwarmId } from "../../src/core/ids.ts";
import { parseEffectivePrices, parseGatewayConfig, type GatewayConfig } from "../../src/core/gateway-config.ts";
import type { PriceTable } from "../../src/core/pricing.ts";
import { capOfTenant, parseTenantBudgets } from "../../src/core/tenant-budget.ts";
import { ok, type Result } from "../../src/core/result.ts";
import { createScheduleStore, type ScheduleStore } from "./schedule-store.ts";
import { createSwarmIndex, type SwarmIndex } from "./swarm-index.ts";
import { createSwarmRooms, type SwarmRooms } from "./swarm-rooms.ts";
import { createUsageReportStore, type UsageReportStore } from "./usage-report-store.ts";

export interface OrchestratorConfig {
  /** Largest request body accepted on /v1/*, in bytes. */
  maxBodyBytes: number;
  /** Bearer tokens accepted on /v1/*; empty means the server refuses every request. */
  apiTokens: readonly string[];
  /** Tools may target loopback and private addresses (ALLOW_PRIVATE_NETWORK, local development only). */
  allowPrivateNetwork: boolean;
  /** WEBHOOK_SECRET, from which each tenant's webhook signing key is derived; null when unset. */
  webhookSecret: string | null;
}

export interface OrchestratorDeps {
  config: OrchestratorConfig;
  swarmRooms: SwarmRooms;
  swarmIndex: SwarmIndex;
  schedules: ScheduleStore;
  usageReports: UsageReportStore;
  /**
   * Model prices (defaults, MODEL_PRICES over them, the gateway's model prices over both). A bad MODEL_PRICES throws here, so only the
   * routes that price something answer 500 (cause in the log), not every route.
   */
  priceTable: () => PriceTable;
  /**
   * What a tenant's spec is admitted against before any SwarmRoom is asked (the gateway's models,
   * the prices, the tenant's monthly cap), read from the settings the SwarmRoom reads. A bad
   * GATEWAY_CONFIG, MODEL_PRICES or TENANT_BUDGETS throws here, as priceTable does.
   */
  admission: (tenant: string) => AdmissionContext;
  newSwarmId: () => string;
  newScheduleId: () => string;
  /** Epoch ms. */
  now: () => number;
}

const ConfigSchema = z.object({
  MAX_BODY_BYTES: z
    .string()
    .regex(/^\d{1,10}$/, "MAX_BODY_BYTES must be a byte count")
    .transform(Number)
    .pipe(z.number().int().min(1)),
  API_TOKENS: z
    .string()
    .optional()
    .transform((raw) => (raw ?? "").split(",").map((token) => token.trim()).filter((token) => token.length > 0)),
  ALLOW_PRIVATE_NETWORK: z
    .enum(["true", "false", ""], { error: 'ALLOW_PRIVATE_NETWORK must be "true" or "false"' })
    .optional()
    .transform((raw) => raw === "true"),
});

/** API_TOKENS is optional here because an unset secret is absent at runtime, whatever Env says. */
export function toOrchestratorConfig(env: {
  MAX_BODY_BYTES: string;
  API_TOKENS?: string | undefined;
  ALLOW_PRIVATE_NETWORK?: string | undefined;
  WEBHOOK_SECRET?: string | undefined;
}): OrchestratorConfig {
  const parsed = ConfigSchema.safeParse({ MAX_BODY_BYTES: env.MAX_BODY_BYTES, API_TOKENS: env.API_TOKENS, ALLOW_PRIVATE_NETWORK: env.ALLOW_PRIVATE_NETWORK?.trim().toLowerCase() });
  // A misconfigured Worker is an operator error: it surfaces as a 500 with the cause in the log only.
  if (!parsed.success) throw new Error(`invalid orchestrator configuration: ${z.prettifyError(parsed.error)}`);
  const webhookSecret = (env.WEBHOOK_SECRET ?? "").trim();
  return {
    maxBodyBytes: parsed.data.MAX_BODY_BYTES,
    apiTokens: parsed.data.API_TOKENS,
    allowPrivateNetwork: parsed.data.ALLOW_PRIVATE_NETWORK,
    webhookSecret: webhookSecret === "" ? null : webhookSecret,
  };
}

const randomBytes = (n: number): Uint8Array => crypto.getRandomValues(new Uint8Array(n));

/** GATEWAY_CONFIG as the SwarmRoom reads it: blank = no gateway (every model name is served). */
function parseRoomGateway(text: string | undefined): Result<GatewayConfig | null, string> {
  return (text ?? "").trim() === "" ? ok(null) : parseGatewayConfig(text, "http://unused.invalid");
}

export function composeDeps(env: Env): OrchestratorDeps {
  const prices = parseEffectivePrices(env.MODEL_PRICES, env.GATEWAY_CONFIG);
  const gateway = parseRoomGateway(env.GATEWAY_CONFIG);
  const tenantBudgets = parseTenantBudgets(env.TENANT_BUDGETS);
  const priceTable = (): PriceTable => {
    if (!prices.ok) throw new Error(`invalid orchestrator configuration: ${prices.error}`);
    return prices.value;
  };
  return {
    config: toOrchestratorConfig(env),
    swarmRooms: createSwarmRooms(env.SWARM_ROOM),
    swarmIndex: createSwarmIndex(env.LEDGER_DB),
    schedules: createScheduleStore(env.LEDGER_DB),
    usageReports: createUsageReportStore(env.LEDGER_DB),
    priceTable,
    admission: (tenant) => {
      if (!gateway.ok) throw new Error(`invalid orchestrator configuration: ${gateway.error}`);
      if (!tenantBudgets.ok) throw new Error(`invalid orchestrator configuration: ${tenantBudgets.error}`);
      return { gateway: gateway.value, prices: priceTable(), tenantCap: capOfTenant(tenantBudgets.value, tenant) };
    },
    newSwarmId: () => newSwarmId(randomBytes),
    newScheduleId: () => newScheduleId(randomBytes),
    now: () => Date.now(),
  };
}
