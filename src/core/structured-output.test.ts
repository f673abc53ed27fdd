import { describe, expect, it } from "vitest";
import type { ResponseFormat } from "./spec-schema.ts";
import { checkOutput, checkSchemaDefinition, MAX_OUTPUT_ERRORS, REPAIR_MARKER, toRepairPrompt } from "./structured-output.ts";

const jsonSchema = (schema: Record<string, unknown>): ResponseFormat => ({ type: "json_schema", json_schema: { name: "answer", schema } });

const REVIEW_SCHEMA = {
  type: "object",
  required: ["summary", "findings"],
  additionalProperties: false,
  properties: {
    summary: { type: "string" },
    findings: {
      type: "array",
      items: {
        type: "object",
        required: ["severity", "line"],
        properties: { severity: { enum: ["low", "medium", "high"] }, line: { type: "integer", minimum: 1 } },
      },
    },
  },
};
const REVIEW = jsonSchema(REVIEW_SCHEMA);

const WITH_REF_SCHEMA = {
  type: "object",
  required: ["owner"],
  properties: { owner: { $ref: "#/$defs/person" } },
  $defs: { person: { type: "object", required: ["name"], properties: { name: { type: "string" } } } },
};
const WITH_REF = jsonSchema(WITH_REF_SCHEMA);

describe("checkOutput", () => {
  it.each([
    ["no format", null, "anything at all"],
    ["a text format", { type: "text" } as const, "  not JSON  "],
  ])("accepts any answer with %s, as given", (_label, format, text) => {
    expect(checkOutput(text, format)).toEqual({ ok: true, value: text, text });
  });

  it.each([
    ["a valid answer", REVIEW, '{"summary":"ok","findings":[{"severity":"low","line":3}]}'],
    ["an answer in a ```json fence", REVIEW, '```json\n{"summary":"ok","findings":[]}\n```'],
    ["an answer in a bare ``` fence with surrounding whitespace", REVIEW, '\n  ```\n{"summary":"ok","findings":[]}\n```  \n'],
    ["an object for json_object", { type: "json_object" } as const, ' {"a":[1,2]} '],
    ["a $ref to #/$defs", WITH_REF, '{"owner":{"name":"Ada"}}'],
  ])("accepts %s", (_label, format, text) => {
    const check = checkOutput(text, format);
    expect(check.ok).toBe(true);
    if (check.ok) expect(JSON.parse(check.text)).toEqual(check.value);
  });

  it("gives the JSON text without its fence", () => {
    expect(checkOutput('```json\n{"a":1}\n```', { type: "json_object" })).toEqual({ ok: true, value: { a: 1 }, text: '{"a":1}' });
  });

  it.each([
    ["a wrong type", REVIEW, '{"summary":5,"findings":[]}', ['#/summary: Instance type "number" is invalid. Expected "string"']],
    ["a missing required property", REVIEW, '{"findings":[]}', ['#: Instance does not have required property "summary"']],
    ["a property additionalProperties forbids", REVIEW, '{"summary":"ok","findings":[],"extra":1}', ['#/extra: Property "extra" is not allowed']],
    [
      "errors in nested array items, each at its place",
      REVIEW,
      '{"summary":"ok","findings":[{"severity":"low","line":1},{"severity":"critical","line":0},{"line":"2"}]}',
      [
        '#/findings/1/severity: Instance does not match any of ["low","medium","high"]',
        "#/findings/1/line: 0 is less than 1",
        '#/findings/2: Instance does not have required property "severity"',
        '#/findings/2/line: Instance type "string" is invalid. Expected "integer"',
      ],
    ],
    ["a value outside an enum", jsonSchema({ enum: ["yes", "no"] }), '"maybe"', ['#: Instance does not match any of ["yes","no"]']],
    ["an error behind a $ref", WITH_REF, '{"owner":{"name":42}}', ['#/owner/name: Instance type "number" is invalid. Expected "string"']],
    ["an array for json_object", { type: "json_object" } as const, "[1,2]", ["the answer must be a JSON object, got an array"]],
    ["a scalar for json_object", { type: "json_object" } as const, '"text"', ["the answer must be a JSON object, got a string"]],
  ])("refuses %s", (_label, format, text, errors) => {
    expect(checkOutput(text, format)).toEqual({ ok: false, errors });
  });

  it.each([
    ["prose", "Here is the JSON you asked for."],
    ["JSON followed by prose (no repair heuristics)", '{"summary":"ok","findings":[]} Hope this helps!'],
    ["a fence that is not closed", '```json\n{"summary":"ok","findings":[]}'],
    ["an empty answer", ""],
  ])("refuses %s as not JSON", (_label, text) => {
    const check = checkOutput(text, REVIEW);
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.errors).toEqual([expect.stringMatching(/^the answer is not valid JSON/)]);
  });

  it("reports the specific errors, not the generic ones about subschemas", () => {
    const check = checkOutput('{"summary":1,"findings":[{"severity":"x","line":1}]}', REVIEW);
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.errors).toHaveLength(2);
    expect(check.errors.join("\n")).not.toMatch(/subschema|does not match schema|Items did not match/);
  });

  it(`reports at most ${MAX_OUTPUT_ERRORS} errors, saying how many more there were`, () => {
    const items = Array.from({ length: 30 }, () => '"x"').join(",");
    const check = checkOutput(`[${items}]`, jsonSchema({ type: "array", items: { type: "integer" } }));
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.errors).toHaveLength(MAX_OUTPUT_ERRORS);
    expect(check.errors[0]).toBe('#/0: Instance type "string" is invalid. Expected "integer"');
    expect(check.errors.at(-1)).toBe("… and 11 more errors");
  });

  it("deduplicates identical errors", () => {
    const check = checkOutput('{"a":"x"}', jsonSchema({ allOf: [{ required: ["b"] }, { required: ["b"] }] }));
    expect(check).toEqual({ ok: false, errors: ['#: Instance does not have required property "b"'] });
  });

  it("reports a schema the validator cannot use instead of throwing", () => {
    const check = checkOutput('{"a":1}', jsonSchema({ properties: { a: { $ref: "#/$defs/missing" } } }));
    expect(check).toEqual({ ok: false, errors: [expect.stringMatching(/^the response schema cannot be used: Unresolved \$ref "#\/\$defs\/missing"/)] });
  });
});

describe("checkSchemaDefinition", () => {
  it.each([
    ["an object schema", REVIEW_SCHEMA],
    ["a schema with $defs and a $ref to them", WITH_REF_SCHEMA],
    ["a property named like a keyword", { type: "object", properties: { type: { type: "string" }, enum: { type: "integer" } } }],
    ["a $ref to an $anchor", { properties: { a: { $ref: "#node" } }, $defs: { n: { $anchor: "node", type: "string" } } }],
    ["an array at the root", { type: "array", items: { type: "string", pattern: "^[a-z]+$" } }],
  ])("accepts %s", (_label, schema) => {
    expect(checkSchemaDefinition(schema)).toEqual([]);
  });

  it.each([
    [
      "a $ref to another document",
      { properties: { a: { $ref: "https://example.com/a.json" } } },
      ['#/properties/a/$ref: only references inside the schema ("#/$defs/…") are allowed, got "https://example.com/a.json"'],
    ],
    ["a $ref to nothing", { items: { $ref: "#/$defs/nope" } }, ['#/items/$ref: "#/$defs/nope" points to nothing in the schema']],
    [
      "an unknown type",
      { type: "object", properties: { n: { type: "float" } } },
      ['#/properties/n/type: "float" is not a JSON Schema type (array, boolean, integer, null, number, object, string)'],
    ],
    ["a pattern that is not a regular expression", { type: "string", pattern: "([a-z]" }, ['#/pattern: "([a-z]" is not a valid regular expression']],
    ["required that is not a list", { type: "object", required: "name" }, ["#/required: must be an array of property names"]],
    ["an unsupported $dynamicRef", { $dynamicRef: "#node" }, ["#/$dynamicRef: not supported, use $ref"]],
    ["an $id that is not a URL", { $id: "http://[broken" }, ["the schema cannot be loaded: Invalid URL"]],
  ])("refuses %s", (_label, schema, problems) => {
    expect(checkSchemaDefinition(schema)).toEqual(problems);
  });
});

describe("toRepairPrompt", () => {
  it("opens with the repair marker, lists the errors and asks for only the corrected JSON", () => {
    const prompt = toRepairPrompt(['#/summary: Instance type "number" is invalid. Expected "string"', '#/extra: Property "extra" is not allowed']);
    expect(prompt.split("\n")[0]).toBe(REPAIR_MARKER);
    expect(prompt).toContain('- #/summary: Instance type "number" is invalid. Expected "string"\n- #/extra: Property "extra" is not allowed');
    expect(prompt).toMatch(/ONLY the corrected JSON/);
  });
});
