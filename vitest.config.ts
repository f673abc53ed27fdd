import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { WEBHOOK_TEST_SECRET } from "./test/webhook-test-secret.ts";

// One vitest project per runtime: pure core and Node tools run in Node; each Worker's tests run
// inside workerd with its real local bindings (@cloudflare/vitest-plugin); e2e drives the real
// `wrangler dev` stack over HTTP, as `npm start` runs it.
const root = import.meta.dirname;
const migrations = await readD1Migrations(path.join(root, "migrations"));
const bundleDir = path.join(root, ".tmp", "orchestrator-bundle");
const compatibilityDate = "2026-11-01";
// The same id as in wrangler.toml: workers bound to the same id share one local D1 database.
// Both Workers' SECRETS_KEY in the tests (tenant secrets are sealed by one and opened by the other).
const SECRETS_TEST_KEY = "test-secrets-key-0123456789abcdef";
const LEDGER_DB_ID = "6f1c2f4e-5a1b-4c3d-9e8f-0e1d2c3b4a59";

export default defineConfig({
  test: {
    projects: [
      {
        test: { name: "core", environment: "node", include: ["src/core/**/*.test.ts"] },
      },
      {
        test: { name: "mock-model", environment: "node", include: ["dev/mock-model/**/*.test.ts", "dev/mock-mcp/**/*.test.ts"] },
      },
      {
        test: { name: "cli", environment: "node", include: ["cli/**/*.test.ts", "src/client/**/*.test.ts"] },
      },
      {
        // The bench's and other scripts' pure helpers (no stack).
        test: { name: "scripts", environment: "node", include: ["scripts/lib/**/*.test.ts"] },
      },
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                // Admin keys of the default tenant; tests create other tenants and keys through the API.
                API_TOKENS: "test-token-a,test-token-b",
                API_KEY_KIND: "local",
                // 20 MiB: uploads past it (and past MAX_BODY_BYTES, 8 MiB) are tested without 200 MB bodies.
                FILES_MAX_BYTES: "20971520",
                WEBHOOK_SECRET: WEBHOOK_TEST_SECRET,
                SECRETS_KEY: SECRETS_TEST_KEY,
                TEST_MIGRATIONS: migrations,
                MOCK_MODEL_URL: inject("mockModelUrl"),
                MOCK_MCP_URL: inject("mockMcpUrl"),
                LEDGER_FLUSH_MS: "50",
                // A batch line is written at the room's next alarm: tests run the alarm by hand.
                BATCH_FLUSH_MS: "0",
                // A gateway that serves every model (default_upstream) and knows one "economy" tier
                // model, for the budget fallback-tier tests.
                GATEWAY_CONFIG: JSON.stringify({
                  upstreams: { default: { base_url: "http://127.0.0.1:9/v1", keys: [{ id: "default" }] } },
                  default_upstream: "default",
                  models: {
                    "mock-1": { upstream: "default", tier: "premium" },
                    "mock-economy": { upstream: "default", tier: "economy", price: { input: 0.01, cached_input: 0.001, output: 0.04 } },
                  },
                }),
                // One capped tenant for the SwarmRoom's monthly-budget tests; every other tenant is
                // uncapped here (the HTTP tests cap theirs with the tenant's monthly_usd limit).
                TENANT_BUDGETS: JSON.stringify({ tn_0000000000c0ffee: { max_usd_per_month: 0.0001 } }),
              },
              // Dispatched packets go to a queue nobody consumes: these tests drive the agent side by hand.
              queueProducers: { TASK_QUEUE: "orchestrator-test-dispatch", LONG_TASK_QUEUE: "orchestrator-test-dispatch-long" },
            },
          })),
        ],
        test: {
          name: "orchestrator",
          include: ["workers/orchestrator/**/*.test.ts", "src/durable/**/*.test.ts", "src/ledger/**/*.test.ts"],
          globalSetup: ["./test/global-setup.ts"],
          setupFiles: ["./test/apply-migrations.ts"],
        },
      },
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./workers/agent/wrangler.toml" },
            miniflare: {
              bindings: {
                MODEL_BASE_URL: `${inject("mockModelUrl")}/v1`,
                MODEL_API_KEY: "test-model-key",
                // Most tests deliver a batch and assert on what its lanes did when it returns: lanes
                // run in the consumer. The executor tests hand tickets to real LaneExecutors.
                AGENT_LANE_HOST: "consumer",
                UPSTREAM_KEYS: "{}",
                GATEWAY_CONFIG: "",
                PERMIT_WAIT_MAX_S: "20",
                TEST_MIGRATIONS: migrations,
                MOCK_MODEL_URL: inject("mockModelUrl"),
                MOCK_MCP_URL: inject("mockMcpUrl"),
                WEBHOOK_SECRET: WEBHOOK_TEST_SECRET,
                SECRETS_KEY: SECRETS_TEST_KEY,
                // Every agent test traces, to the OTLP receiver of the global setup (the spans of a
                // swarm are what workers/agent/test/traces.test.ts checks; the others only export).
                OTEL_EXPORTER_OTLP_ENDPOINT: inject("otlpUrl"),
              },
              // The ledger, shared with the orchestrator below, so tests can read what it flushed.
              d1Databases: { LEDGER_DB: LEDGER_DB_ID },
              workers: [
                {
                  name: "edgeswarm-orchestrator",
                  modules: true,
                  modulesRoot: bundleDir,
                  scriptPath: path.join(bundleDir, "index.js"),
                  compatibilityDate,
                  durableObjects: {
                    SWARM_ROOM: { className: "SwarmRoom", useSQLite: true },
                    KEY_POOL: { className: "KeyPool", useSQLite: true },
                    TENANT_BUDGET: { className: "TenantBudget", useSQLite: true },
                  },
                  d1Databases: { LEDGER_DB: LEDGER_DB_ID },
                  // Dispatched packets are not consumed automatically: tests deliver batches by hand.
                  queueProducers: { TASK_QUEUE: "agent-test-dispatch", LONG_TASK_QUEUE: "agent-test-dispatch-long" },
                  bindings: {
                    API_TOKENS: "test-token-a",
                    LANE_SLOTS: "8",
                    MAX_BODY_BYTES: "8388608",
                    MODEL_PRICES: "",
                    GATEWAY_CONFIG: "",
                    TENANT_BUDGETS: "",
                    // Short leases so the lease-expiry tests need not wait 30 s.
                    LEASE_GRACE_S: "1",
                    TOOL_TURN_LEASE_S: "0",
                    LEDGER_FLUSH_MS: "50",
                    SECRETS_KEY: SECRETS_TEST_KEY,
                    // Every swarm of these tests is traced: its room keeps a trace id and hands the
                    // traceparent to lanes, and exports its root span to the tests' receiver.
                    OTEL_EXPORTER_OTLP_ENDPOINT: inject("otlpUrl"),
                  },
                },
              ],
            },
          })),
        ],
        test: {
          name: "agent",
          include: ["workers/agent/**/*.test.ts", "src/model/**/*.test.ts"],
          globalSetup: ["./test/global-setup.ts"],
          setupFiles: ["./test/apply-migrations.ts"],
        },
      },
      {
        test: {
          name: "e2e",
          environment: "node",
          include: ["test/e2e/**/*.test.ts", "test/browser/**/*.test.ts"],
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
