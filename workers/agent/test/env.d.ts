// Bindings the agent test project adds to the Worker's own (see vitest.config.ts, project "agent").
declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    MOCK_MODEL_URL: string;
    MOCK_MCP_URL: string;
    LEDGER_DB: D1Database;
    /** The global setup's OTLP receiver (scripts/lib/otlp-receiver.ts). */
    OTEL_EXPORTER_OTLP_ENDPOINT: string;
  }
}
