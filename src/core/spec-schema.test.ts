import { describe, expect, it } from "vitest";
import { toIssueDetails } from "./errors.ts";
import { MAX_PROMPT_CHARS, MAX_TASKS, SwarmSpecSchema } from "./spec-schema.ts";

const minimal = { name: "demo", model: "gpt-4.1", tasks: [{ prompt: "Say hi" }] };

/** The issue paths of an invalid spec (empty when it is valid). */
function issuePaths(input: unknown): string[] {
  const r = SwarmSpecSchema.safeParse(input);
  return r.success ? [] : toIssueDetails(r.error).map((d) => d.path);
}

describe("SwarmSpecSchema defaults", () => {
  it("fills every limit of a minimal spec", () => {
    const r = SwarmSpecSchema.safeParse(minimal);
    expect(r.success && r.data).toEqual({
      ...minimal,
      limits: {
        concurrency: 32,
        max_output_tokens: 1_024,
        timeout_s: 60,
        max_attempts: 4,
        long_timeout_s: 600,
        max_turns: 8,
        max_tool_calls: 16,
        stop_after_failures: 20,
        cache_warmup: "auto",
      },
    });
  });

  it.each([
    [
      { concurrency: 5 },
      {
        concurrency: 5,
        max_output_tokens: 1_024,
        timeout_s: 60,
        max_attempts: 4,
        long_timeout_s: 600,
        max_turns: 8,
        max_tool_calls: 16,
        stop_after_failures: 20,
        cache_warmup: "auto",
      },
    ],
    [
      { max_attempts: 1, timeout_s: 1.5, retry_budget: 0 },
      {
        concurrency: 32,
        max_output_tokens: 1_024,
        timeout_s: 1.5,
        max_attempts: 1,
        long_timeout_s: 600,
        max_turns: 8,
        max_tool_calls: 16,
        stop_after_failures: 20,
        cache_warmup: "auto",
        retry_budget: 0,
      },
    ],
  ])("partial limits %j are completed", (limits, expected) => {
    const r = SwarmSpecSchema.safeParse({ ...minimal, limits });
    expect(r.success && r.data.limits).toEqual(expected);
  });

  it("accepts every optional field", () => {
    const spec = {
      ...minimal,
      model: "accounts/fireworks/models/llama-v3p1-8b@latest:free",
      system: "Be brief.",
      tasks: [{ id: "intro", prompt: "a" }, { prompt: "b" }],
      response_format: {
        type: "json_schema",
        json_schema: { name: "answer_v1", schema: { type: "object" }, strict: true },
      },
      metadata: { team: "docs", run: 3, dry: false, note: null },
    };
    expect(SwarmSpecSchema.safeParse(spec).success).toBe(true);
  });
});

describe("SwarmSpecSchema rejects, naming the bad field", () => {
  it.each<[string, unknown, string]>([
    ["unknown top-level key", { ...minimal, temperature: 0.2 }, "(root)"],
    ["missing name", { model: "m", tasks: minimal.tasks }, "name"],
    ["empty name", { ...minimal, name: "" }, "name"],
    ["missing model", { name: "n", tasks: minimal.tasks }, "model"],
    ["model with spaces", { ...minimal, model: "gpt 4" }, "model"],
    ["no tasks", { ...minimal, tasks: [] }, "tasks"],
    ["too many tasks", { ...minimal, tasks: Array.from({ length: MAX_TASKS + 1 }, () => ({ prompt: "x" })) }, "tasks"],
    ["empty prompt", { ...minimal, tasks: [{ prompt: "ok" }, { prompt: "" }] }, "tasks.1.prompt"],
    ["prompt too long", { ...minimal, tasks: [{ prompt: "x".repeat(MAX_PROMPT_CHARS + 1) }] }, "tasks.0.prompt"],
    ["missing prompt", { ...minimal, tasks: [{ id: "a" }] }, "tasks.0.prompt"],
    ["task id with a colon", { ...minimal, tasks: [{ id: "a:b", prompt: "x" }] }, "tasks.0.id"],
    ["task id with whitespace", { ...minimal, tasks: [{ id: "a b", prompt: "x" }] }, "tasks.0.id"],
    ["unknown task key", { ...minimal, tasks: [{ prompt: "x", model: "y" }] }, "tasks.0"],
    ["long that is not a boolean", { ...minimal, tasks: [{ prompt: "x", long: "yes" }] }, "tasks.0.long"],
    ["long_timeout_s over 12 minutes", { ...minimal, limits: { long_timeout_s: 721 } }, "limits.long_timeout_s"],
    ["negative retry_budget", { ...minimal, limits: { retry_budget: -1 } }, "limits.retry_budget"],
    ["six fallback models", { ...minimal, fallback: ["a", "b", "c", "d", "e", "f"] }, "fallback"],
    ["a fallback model with a space", { ...minimal, fallback: ["gpt 4"] }, "fallback.0"],
    ["concurrency 0", { ...minimal, limits: { concurrency: 0 } }, "limits.concurrency"],
    ["concurrency 1,501", { ...minimal, limits: { concurrency: 1_501 } }, "limits.concurrency"],
    ["fractional concurrency", { ...minimal, limits: { concurrency: 2.5 } }, "limits.concurrency"],
    ["max_output_tokens 0", { ...minimal, limits: { max_output_tokens: 0 } }, "limits.max_output_tokens"],
    ["timeout_s 601", { ...minimal, limits: { timeout_s: 601 } }, "limits.timeout_s"],
    ["max_attempts 11", { ...minimal, limits: { max_attempts: 11 } }, "limits.max_attempts"],
    ["unknown limit", { ...minimal, limits: { retries: 3 } }, "limits"],
    ["unknown response_format type", { ...minimal, response_format: { type: "xml" } }, "response_format.type"],
    [
      "json_schema name with spaces",
      { ...minimal, response_format: { type: "json_schema", json_schema: { name: "my schema", schema: {} } } },
      "response_format.json_schema.name",
    ],
    ["metadata with 51 keys", { ...minimal, metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }, "metadata"],
    ["metadata object value", { ...minimal, metadata: { nested: { a: 1 } } }, "metadata.nested"],
  ])("%s → %s", (_name, input, path) => {
    expect(issuePaths(input)).toContain(path);
  });

  it.each([
    [1, true],
    [MAX_TASKS, true],
    [0, false],
    [MAX_TASKS + 1, false],
  ])("%i tasks accepted: %s", (count, accepted) => {
    const spec = { ...minimal, tasks: Array.from({ length: count }, () => ({ prompt: "x" })) };
    expect(SwarmSpecSchema.safeParse(spec).success).toBe(accepted);
  });

  it("explains an empty task list", () => {
    const r = SwarmSpecSchema.safeParse({ ...minimal, tasks: [] });
    expect(r.success ? [] : toIssueDetails(r.error)).toContainEqual({ path: "tasks", message: "a swarm needs at least one task" });
  });
});

describe("mcp_servers", () => {
  const mcp = (servers: unknown) => ({ ...minimal, mcp_servers: servers });

  it("fills the defaults of a server", () => {
    const r = SwarmSpecSchema.safeParse(mcp([{ name: "code", url: "https://mcp.example.com/mcp" }]));
    expect(r.success && r.data.mcp_servers).toEqual([{ name: "code", url: "https://mcp.example.com/mcp", tools: "*", timeout_s: 30 }]);
  });

  it.each([
    [[{ name: "Code", url: "https://a.example/mcp" }], "mcp_servers.0.name"],
    [[{ name: "code_x", url: "https://a.example/mcp" }], "mcp_servers.0.name"],
    [[{ name: "a".repeat(17), url: "https://a.example/mcp" }], "mcp_servers.0.name"],
    [[{ name: "code", url: "ftp://a.example/mcp" }], "mcp_servers.0.url"],
    [[{ name: "code", url: "https://a.example/mcp", tools: [] }], "mcp_servers.0.tools"],
    [[{ name: "code", url: "https://a.example/mcp", tools: "all" }], "mcp_servers.0.tools"],
    [[{ name: "code", url: "https://a.example/mcp", tools: ["a", "b", "a"] }], "mcp_servers.0.tools.2"],
    [[{ name: "code", url: "https://a.example/mcp", timeout_s: 0.5 }], "mcp_servers.0.timeout_s"],
    [[{ name: "code", url: "https://a.example/mcp", timeout_s: 121 }], "mcp_servers.0.timeout_s"],
    [[{ name: "code", url: "https://a.example/mcp", extra: 1 }], "mcp_servers.0"],
    [
      [
        { name: "code", url: "https://a.example/mcp" },
        { name: "code", url: "https://b.example/mcp" },
      ],
      "mcp_servers.1.name",
    ],
    [Array.from({ length: 9 }, (_, i) => ({ name: `s${i}`, url: "https://a.example/mcp" })), "mcp_servers"],
  ])("refuses %j at %s", (servers, path) => {
    expect(issuePaths(mcp(servers))).toContain(path);
  });

  it("refuses a webhook tool named like an MCP tool", () => {
    const tool = { name: "mcp__code__x", description: "d", parameters: { type: "object" }, url: "https://hooks.example.com/x" };
    expect(issuePaths({ ...minimal, tools: [tool] })).toEqual(["tools.0.name"]);
  });
});

describe("mcp_servers credential", () => {
  it.each([
    ["code_search-1", []],
    ["has.dot", ["mcp_servers.0.credential"]],
    ["", ["mcp_servers.0.credential"]],
  ])("%j → %j", (credential, paths) => {
    expect(issuePaths({ ...minimal, mcp_servers: [{ name: "code", url: "https://a.example/mcp", credential }] })).toEqual(paths);
  });
});
