// The orchestrator's composition root: the only module that reads `env`. It reads the settings
// (src/core/env-settings.ts) and builds each adapter from the one binding it needs; handlers and
// cron receive the result.
import type { AdmissionContext } from "../../src/core/admit-swarm.ts";
import { newApiKey, type NewApiKey } from "../../src/core/api-key.ts";
import { readOrchestratorSettings, type OrchestratorConfig } from "../../src/core/env-settings.ts";
import { newAuditId, newBatchId, newFileId, newKeyId, newScheduleId, newSwarmId, newTenantId } from "../../src/core/ids.ts";
import type { PriceTable } from "../../src/core/pricing.ts";
import type { Result } from "../../src/core/result.ts";
import { capOfTenant } from "../../src/core/tenant-budget.ts";
import { createIdempotencyStore, type IdempotencyStore } from "./idempotency-store.ts";
import { toTenantCap, type TenantLimits } from "../../src/core/tenant-limits.ts";
import { createAuditStore, type AuditStore } from "./audit-store.ts";
import { createKeyStore, type KeyStore } from "./key-store.ts";
import { createRateLimiter, type RateLimiter } from "./rate-limiter.ts";
import { createTenantStore, type TenantStore } from "./tenant-store.ts";
import { createScheduleStore, type ScheduleStore } from "./schedule-store.ts";
import { createSwarmIndex, type SwarmIndex } from "./swarm-index.ts";
import { createSwarmRooms, type SwarmRooms } from "./swarm-rooms.ts";
import { createCatalogReader, MCP_MAX_REDIRECTS, type ReadMcpCatalogs } from "../../src/mcp/read-catalogs.ts";
import { createSecretStore, type SecretStore } from "./secret-store.ts";
import { createSecretBox, type SecretBox } from "../../src/secrets/secret-box.ts";
import { createFileObjects, type FileObjects } from "../../src/files/file-objects.ts";
import { createFileIndex, type FileIndex } from "./file-index.ts";
import { createBatchStore, type BatchStore } from "./batch-store.ts";
import { createUsageReportStore, type UsageReportStore } from "./usage-report-store.ts";

export interface OrchestratorDeps {
  config: OrchestratorConfig;
  swarmRooms: SwarmRooms;
  swarmIndex: SwarmIndex;
  schedules: ScheduleStore;
  usageReports: UsageReportStore;
  /** Idempotency-Key records (D1), per tenant, kept 24 h. */
  idempotency: IdempotencyStore;
  tenants: TenantStore;
  keys: KeyStore;
  audit: AuditStore;
  rateLimiter: RateLimiter;
  /** The D1 index of uploaded and generated files. */
  files: FileIndex;
  /** Their bytes (FILES_BUCKET). */
  fileObjects: FileObjects;
  /** The D1 index of batches (OpenAI's Batch API), each over a swarm. */
  batches: BatchStore;
  /**
   * Model prices (defaults, MODEL_PRICES over them, the gateway's model prices over both). A bad MODEL_PRICES throws here, so only the
   * routes that price something answer 500 (cause in the log), not every route.
   */
  priceTable: () => PriceTable;
  /**
   * What a tenant's spec is admitted against before any SwarmRoom is asked (the gateway's models,
   * the prices, the tenant's monthly cap: its `monthly_usd` over TENANT_BUDGETS), read from the
   * settings the SwarmRoom reads. A bad GATEWAY_CONFIG, MODEL_PRICES or TENANT_BUDGETS throws here, as priceTable does.
   */
  admission: (tenant: string, limits: TenantLimits) => AdmissionContext;
  /** Tenant secrets, as ciphertext (D1 `tenant_secrets`). */
  secrets: SecretStore;
  /** Seals and opens tenant secrets; null when SECRETS_KEY is unset (no secret can be stored). */
  secretBox: SecretBox | null;
  /** Reads and pins a spec's MCP servers' catalogs at submit (src/mcp/read-catalogs.ts). */
  mcpCatalogs: ReadMcpCatalogs;
  newSwarmId: () => string;
  newScheduleId: () => string;
  newTenantId: () => string;
  newKeyId: () => string;
  /** A fresh tenant API key of the configured kind (`es_live_…` / `es_local_…`). */
  newApiKey: () => NewApiKey;
  newAuditId: () => string;
  newFileId: () => string;
  newBatchId: () => string;
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
    tenants: createTenantStore(env.LEDGER_DB),
    keys: createKeyStore(env.LEDGER_DB),
    audit: createAuditStore(env.LEDGER_DB),
    rateLimiter: createRateLimiter(env.TENANT_LIMITER),
    files: createFileIndex(env.LEDGER_DB),
    fileObjects: createFileObjects(env.FILES_BUCKET),
    batches: createBatchStore(env.LEDGER_DB),
    priceTable: () => required(settings.prices),
    admission: (tenant, limits) => ({
      gateway: required(settings.gateway),
      prices: required(settings.prices),
      tenantCap: toTenantCap(limits, capOfTenant(required(settings.tenantBudgets), tenant)),
    }),
    secrets: createSecretStore(env.LEDGER_DB),
    secretBox: settings.config.secretsKey === null ? null : createSecretBox(settings.config.secretsKey),
    // The global fetch stays bound to the global scope (Workers throw "Illegal invocation" otherwise).
    mcpCatalogs: createCatalogReader({
      fetch: (input, init) => fetch(input, init),
      allowPrivate: settings.config.allowPrivateNetwork,
      maxRedirects: MCP_MAX_REDIRECTS,
    }),
    newSwarmId: () => newSwarmId(randomBytes),
    newScheduleId: () => newScheduleId(randomBytes),
    newTenantId: () => newTenantId(randomBytes),
    newKeyId: () => newKeyId(randomBytes),
    newApiKey: () => newApiKey(settings.config.apiKeyKind, randomBytes),
    newAuditId: () => newAuditId(Date.now(), randomBytes),
    newFileId: () => newFileId(randomBytes),
    newBatchId: () => newBatchId(randomBytes),
    now: () => Date.now(),
  };
}
