// The orchestrator's composition root: the only module that reads `env`. It reads the settings
// (src/core/env-settings.ts) and builds each adapter from the one binding it needs; handlers and
// cron receive the result.
import type { AdmissionContext } from "../../src/core/admit-swarm.ts";
import { hashApiKey, newApiKey, type NewApiKey } from "../../src/core/api-key.ts";
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
  /** SHA-256 digests (hex) of the API_TOKENS tokens, in their order: what a presented token's digest is compared with. */
  apiTokenDigests: () => Promise<readonly string[]>;
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

/**
 * Deps built once per `env` object, not once per request. An isolate's bindings and secrets are
 * its own for its life: "you can use apiClient or LOG_LEVEL, configured before any request is
 * handled" (developers.cloudflare.com/changelog/2025-03-17-importable-env, on `env` imported at
 * the top level), and workerd hands a module Worker the same `env` on every request (one object
 * over a 200-task bench's requests, checked locally). A new secret is a new isolate. What a request
 * must see fresh (keys, tenants, revokes) is read from D1 per call, never kept here. Before this,
 * each request parsed the settings and imported the secret box's key again. A test's env of its
 * own (`{ ...env, X }`) gets deps of its own.
 */
const composed = new WeakMap<Env, OrchestratorDeps>();

export function composeDeps(env: Env): OrchestratorDeps {
  let deps = composed.get(env);
  if (deps === undefined) {
    deps = buildDeps(env);
    composed.set(env, deps);
  }
  return deps;
}

function buildDeps(env: Env): OrchestratorDeps {
  const settings = readOrchestratorSettings(env);
  // The digests are kept once made. Each request hashed every configured token again before this.
  // Kept as values, not as a promise another request might wait on. The secret box, shared too,
  // keeps its imported and derived keys as promises: workerd's SubtleCrypto settles them at once
  // (src/workerd/api/crypto/crypto.c++ runs each operation in `js.evalNow`), so no request ever
  // waits on I/O another request started.
  let tokenDigests: readonly string[] | null = null;
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
    apiTokenDigests: async () => {
      tokenDigests ??= await Promise.all(settings.config.apiTokens.map(hashApiKey));
      return tokenDigests;
    },
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
