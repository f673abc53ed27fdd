import { describe, expect, it } from "vitest";
import {
  findToolNameCollisions,
  hashMcpTool,
  pinMcpCatalog,
  toCanonicalJson,
  toExposedToolName,
  toMcpFunctionTool,
  toToolDefinitionBytes,
  type McpListedTool,
} from "./mcp-catalog.ts";
import { McpServerSpecSchema } from "./spec-schema.ts";

const search: McpListedTool = {
  name: "search_code",
  description: "Search the code",
  inputSchema: { type: "object", properties: { query: { type: "string" } } },
};
const read: McpListedTool = { name: "read_file", inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } };
const LEGACY = { kind: "legacy" } as const;
const server = (tools: unknown) => McpServerSpecSchema.parse({ name: "code", url: "https://mcp.example.com/mcp", tools });

describe("toExposedToolName", () => {
  it.each([
    ["code", "search_code", "mcp__code__search_code"],
    ["a1", "x-y", "mcp__a1__x-y"],
    ["code", "has.dot", null],
    ["code", "é", null],
    ["code", "t".repeat(64 - "mcp__code__".length), `mcp__code__${"t".repeat(64 - "mcp__code__".length)}`],
    ["code", "t".repeat(65 - "mcp__code__".length), null],
  ])("%s / %s → %s", (s, t, expected) => {
    expect(toExposedToolName(s, t)).toBe(expected);
  });
});

describe("toCanonicalJson and hashMcpTool", () => {
  it.each([
    [{ b: 1, a: [2, { d: 1, c: null }] }, '{"a":[2,{"c":null,"d":1}],"b":1}'],
    [{ a: undefined, b: "x" }, '{"b":"x"}'],
    ["s", '"s"'],
  ])("%j → %s", (value, expected) => {
    expect(toCanonicalJson(value)).toBe(expected);
  });

  it("hashes the same definition the same whatever its key order, and a changed schema differently", async () => {
    const reordered: McpListedTool = {
      description: "Search the code",
      inputSchema: { properties: { query: { type: "string" } }, type: "object" },
      name: "search_code",
    };
    const changed: McpListedTool = { ...search, inputSchema: { type: "object", properties: { query: { type: "number" } } } };
    expect(await hashMcpTool(reordered)).toBe(await hashMcpTool(search));
    expect(await hashMcpTool(changed)).not.toBe(await hashMcpTool(search));
    expect(await hashMcpTool({ ...search, description: "other" })).not.toBe(await hashMcpTool(search));
  });
});

describe("pinMcpCatalog", () => {
  it('pins every listed tool for "*"', async () => {
    const r = await pinMcpCatalog(server("*"), 0, [search, read], LEGACY);
    expect(r.ok && r.value.tools.map((t) => [t.tool, t.exposed])).toEqual([
      ["search_code", "mcp__code__search_code"],
      ["read_file", "mcp__code__read_file"],
    ]);
    expect(r.ok && r.value).toMatchObject({ name: "code", url: "https://mcp.example.com/mcp", timeout_s: 30, era: LEGACY });
    expect(r.ok && r.value.tools[0]?.hash).toBe(await hashMcpTool(search));
  });

  it("pins the named tools only", async () => {
    const r = await pinMcpCatalog(server(["read_file"]), 2, [search, read], LEGACY);
    expect(r.ok && r.value.tools.map((t) => t.tool)).toEqual(["read_file"]);
  });

  it.each([
    [["read_file", "nope"], [search, read], "mcp_servers.3.tools.1", 'the server has no tool "nope" (it lists: search_code, read_file)'],
    [["nope"], [], "mcp_servers.3.tools.0", 'the server has no tool "nope" (it lists: no tools)'],
    ["*", [{ name: "bad.name", inputSchema: {} }], "mcp_servers.3", "list the tools you need"],
    [["bad.name"], [{ name: "bad.name", inputSchema: {} }], "mcp_servers.3.tools.0", "1-64 letters"],
  ])("refuses %j of %j at %s", async (tools, listed, path, message) => {
    const r = await pinMcpCatalog(server(tools), 3, listed as McpListedTool[], LEGACY);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error[0]?.path).toBe(path);
    expect(r.error[0]?.message).toContain(message);
  });
});

describe("findToolNameCollisions", () => {
  it("names a tool name used twice, across servers or with a webhook tool", async () => {
    const a = await pinMcpCatalog(server("*"), 0, [search], LEGACY);
    if (!a.ok) throw new Error("pin failed");
    expect(findToolNameCollisions([a.value], ["other"])).toEqual([]);
    expect(findToolNameCollisions([a.value, a.value], [])).toEqual([
      { path: "mcp_servers.1.tools", message: "the tool name mcp__code__search_code is used twice" },
    ]);
    expect(findToolNameCollisions([a.value], ["mcp__code__search_code"])).toHaveLength(1);
  });
});

describe("toMcpFunctionTool and toToolDefinitionBytes", () => {
  it("offers the server's description and schema under the exposed name", async () => {
    const r = await pinMcpCatalog(server("*"), 0, [search, read], LEGACY);
    if (!r.ok) throw new Error("pin failed");
    const [first, second] = r.value.tools;
    if (first === undefined || second === undefined) throw new Error("tools missing");
    expect(toMcpFunctionTool("code", first)).toEqual({
      type: "function",
      function: { name: "mcp__code__search_code", description: "Search the code", parameters: search.inputSchema },
    });
    expect(toMcpFunctionTool("code", second).function.description).toBe("Tool read_file of the MCP server code.");
  });

  it.each([
    [[], 0],
    [[{ a: "x" }], 11],
    [[{ a: "é" }], 12],
  ])("%j is %i bytes", (definitions, bytes) => {
    expect(toToolDefinitionBytes(definitions)).toBe(bytes);
  });
});
