// Bindings the orchestrator test project adds to the generated Env (see vitest.config.ts).
declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    MOCK_MODEL_URL: string;
    MOCK_MCP_URL: string;
  }
}
