// The orchestrator's composition root: the only module that reads `env`. It reads the settings
// (src/core/env-settings.ts) and builds each adapter from the one binding it needs; handlers and
// cron receive the result.
import type { AdmissionContext } from "../../src/core/admit-swarm.ts";
import { readOrchestratorSettings, type OrchestratorConfig } from "../../src/core/env-settings.ts";
import { newScheduleId, newSwarmId } from "../../src/core/ids.ts";
import type { PriceTable } from "../../src/core/pricing.ts";
import type { Result } from "../../src/core/result.ts";
import { capOfTenant } from "../../src/core/tenant-budget.ts";
import { createIdempotencyStore, type IdempotencyStore } from "./idempotency-store.ts";
import { createScheduleStore, type ScheduleStore } from "./schedule-store.ts";
import { createSwarmIndex, type SwarmIndex } from "./swarm-index.ts";
import { createSwarmRooms, type SwarmRooms } from "./swarm-rooms.ts";
import { createUsageReportStore, type UsageReportStore } from "./usage-report-store.ts";

export interface OrchestratorDeps {
  config: OrchestratorConfig;
  swarmRooms: SwarmRooms;
  swarmIndex: SwarmIndex;
  schedules: ScheduleStore;
  usageReports: UsageReportStore;
  /** Idempotency-Key records (D1), per tenant, kept 24 h. */
  idempotency: IdempotencyStore;
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

const randomBytes = (n: number): Uint8Array => crypto.getRandomValues(new Uint8Array(n));

/** A misconfigured Worker is an operator error: it surfaces as a 500 with the cause in the log only. */
function required<T>(setting: Result<T, string>): T {
  if (!setting.ok) throw new Error(`invalid orchestrator settings: ${setting.error}`);
  return setting.value;
}

export function composeDeps(env: Env): OrchestratorDeps {
  const settings = readOrchestratorSettings(env);
  return {
    config: settings.config,
    swarmRooms: createSwarmRooms(env.SWARM_ROOM),
    swarmIndex: createSwarmIndex(env.LEDGER_DB),
    schedules: createScheduleStore(env.LEDGER_DB),
    usageReports: createUsageReportStore(env.LEDGER_DB),
    idempotency: createIdempotencyStore(env.LEDGER_DB),
    priceTable: () => required(settings.prices),
    admission: (tenant) => ({
      gateway: required(settings.gateway),
      prices: required(settings.prices),
      tenantCap: capOfTenant(required(settings.tenantBudgets), tenant),
    }),
    newSwarmId: () => newSwarmId(randomBytes),
    newScheduleId: () => newScheduleId(randomBytes),
    now: () => Date.now(),
  };
}
