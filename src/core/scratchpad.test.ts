// The scratchpad tools as the model sees them, and how its arguments become SwarmRoom requests:
// every refusal names the tool and the field so the model can correct itself.
import { describe, expect, it } from "vitest";
import { isScratchpadTool, SCRATCHPAD_LIMITS, SCRATCHPAD_TOOLS, toScratchpadRequest } from "./scratchpad.ts";

describe("scratchpad tool definitions", () => {
  it("offers get, put and list, in that order", () => {
    expect(SCRATCHPAD_TOOLS.map((t) => t.function.name)).toEqual(["scratchpad_get", "scratchpad_put", "scratchpad_list"]);
  });

  it.each(SCRATCHPAD_TOOLS.map((tool) => [tool.function.name, tool] as const))("%s is a function tool with an object schema", (_name, tool) => {
    expect(tool.type).toBe("function");
    expect(tool.function.description.length).toBeGreaterThan(20);
    const parameters: {
      type: string;
      properties: Record<string, { type: string; description: string }>;
      required?: readonly string[];
      additionalProperties: boolean;
    } = tool.function.parameters;
    expect(parameters.type).toBe("object");
    expect(parameters.additionalProperties).toBe(false);
    for (const property of Object.values(parameters.properties)) {
      expect(property.type).toBe("string");
      expect(property.description).not.toBe("");
    }
    for (const field of parameters.required ?? []) expect(Object.keys(parameters.properties)).toContain(field);
    // It must survive the JSON trip to the upstream unchanged.
    expect(JSON.parse(JSON.stringify(tool))).toEqual(tool);
  });

  it.each([
    { name: "scratchpad_get", required: ["key"], properties: ["key"] },
    { name: "scratchpad_put", required: ["key", "value"], properties: ["key", "value"] },
    { name: "scratchpad_list", required: [], properties: ["prefix"] },
  ])("$name takes $properties (required: $required)", ({ name, required, properties }) => {
    const tool = SCRATCHPAD_TOOLS.find((t) => t.function.name === name);
    const parameters: { properties: object; required?: readonly string[] } | undefined = tool?.function.parameters;
    expect(Object.keys(parameters?.properties ?? {})).toEqual(properties);
    expect(parameters?.required ?? []).toEqual(required);
  });

  it("tells the model the value limit", () => {
    expect(SCRATCHPAD_TOOLS[1].function.description).toContain(String(SCRATCHPAD_LIMITS.valueChars));
  });
});

describe("isScratchpadTool", () => {
  it.each([
    ["scratchpad_get", true],
    ["scratchpad_put", true],
    ["scratchpad_list", true],
    ["scratchpad", false],
    ["scratchpad_delete", false],
    ["SCRATCHPAD_GET", false],
    ["http_fetch", false],
    ["", false],
  ])("%j → %s", (name, want) => {
    expect(isScratchpadTool(name)).toBe(want);
  });
});

describe("toScratchpadRequest", () => {
  const long = (n: number) => "k".repeat(n);
  it.each([
    { name: "scratchpad_get", args: { key: "notes/a" }, request: { op: "get", key: "notes/a" } },
    { name: "scratchpad_get", args: { key: "ключ 😀" }, request: { op: "get", key: "ключ 😀" } },
    { name: "scratchpad_get", args: { key: long(SCRATCHPAD_LIMITS.keyChars) }, request: { op: "get", key: long(SCRATCHPAD_LIMITS.keyChars) } },
    { name: "scratchpad_put", args: { key: "k", value: "v" }, request: { op: "put", key: "k", value: "v", taskId: "task-007" } },
    { name: "scratchpad_put", args: { key: "k", value: "" }, request: { op: "put", key: "k", value: "", taskId: "task-007" } },
    {
      name: "scratchpad_put",
      args: { key: "k", value: "v".repeat(SCRATCHPAD_LIMITS.valueChars) },
      request: { op: "put", key: "k", value: "v".repeat(SCRATCHPAD_LIMITS.valueChars), taskId: "task-007" },
    },
    // Unknown extra fields are dropped, not refused (models add them).
    { name: "scratchpad_put", args: { key: "k", value: "v", ttl: 60 }, request: { op: "put", key: "k", value: "v", taskId: "task-007" } },
    { name: "scratchpad_list", args: { prefix: "notes/" }, request: { op: "list", prefix: "notes/" } },
    { name: "scratchpad_list", args: {}, request: { op: "list", prefix: "" } },
    { name: "scratchpad_list", args: { prefix: "" }, request: { op: "list", prefix: "" } },
    { name: "scratchpad_list", args: { prefix: "%_" }, request: { op: "list", prefix: "%_" } },
  ])("$name $args → $request", ({ name, args, request }) => {
    expect(toScratchpadRequest(name, args, "task-007")).toEqual({ ok: true, request });
  });

  it.each([
    { case: "get without key", name: "scratchpad_get", args: {}, field: "key" },
    { case: "get with an empty key", name: "scratchpad_get", args: { key: "" }, field: "key", says: "key must not be empty" },
    {
      case: "get with a key too long",
      name: "scratchpad_get",
      args: { key: long(SCRATCHPAD_LIMITS.keyChars + 1) },
      field: "key",
      says: "key is longer than 200 characters",
    },
    { case: "get with a number key", name: "scratchpad_get", args: { key: 7 }, field: "key" },
    { case: "put without key", name: "scratchpad_put", args: { value: "v" }, field: "key" },
    { case: "put with an empty key", name: "scratchpad_put", args: { key: "", value: "v" }, field: "key", says: "key must not be empty" },
    { case: "put with a key too long", name: "scratchpad_put", args: { key: long(201), value: "v" }, field: "key", says: "key is longer than 200 characters" },
    { case: "put without value", name: "scratchpad_put", args: { key: "k" }, field: "value" },
    { case: "put with a number value", name: "scratchpad_put", args: { key: "k", value: 42 }, field: "value" },
    { case: "put with an object value", name: "scratchpad_put", args: { key: "k", value: { a: 1 } }, field: "value" },
    { case: "put with a null value", name: "scratchpad_put", args: { key: "k", value: null }, field: "value" },
    {
      case: "put with a value too long",
      name: "scratchpad_put",
      args: { key: "k", value: "v".repeat(SCRATCHPAD_LIMITS.valueChars + 1) },
      field: "value",
      says: "value is longer than 65536 characters",
    },
    { case: "list with a number prefix", name: "scratchpad_list", args: { prefix: 3 }, field: "prefix" },
    { case: "list with a prefix too long", name: "scratchpad_list", args: { prefix: long(201) }, field: "prefix" },
  ])("refuses $case, naming the tool and the field", ({ name, args, field, says }) => {
    const result = toScratchpadRequest(name, args, "task-007");
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.startsWith(`${name}: ${field}: `)).toBe(true);
    if (says !== undefined) expect(result.error).toContain(says);
  });

  it("names both fields when both are wrong", () => {
    const result = toScratchpadRequest("scratchpad_put", { key: "", value: 1 }, "t");
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatch(/^scratchpad_put: key: key must not be empty; value: /);
  });

  it.each(["scratchpad_delete", "http_fetch", ""])("refuses %j: not a scratchpad tool", (name) => {
    expect(toScratchpadRequest(name, { key: "k" }, "t")).toEqual({ ok: false, error: `${name} is not a scratchpad tool` });
  });
});
