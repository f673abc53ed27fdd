// Checks an answer against the swarm's response_format (JSON, or JSON matching a JSON Schema) and
// words the one repair turn. No I/O.
// Schemas run on @cfworker/json-schema: it interprets them, where Ajv compiles with `new Function`,
// which Workers forbid.
import { dereference, Validator, type OutputUnit, type Schema } from "@cfworker/json-schema";
import type { ResponseFormat } from "./spec-schema.ts";
import { toErrorMessage } from "./error-message.ts";

export const REPAIR_MARKER = "[edgeswarm:repair]";
/** Errors reported for one answer; they are shown in the swarm's status and sent back to the model. */
export const MAX_OUTPUT_ERRORS = 20;

export type OutputCheck = { ok: true; value: unknown; text: string } | { ok: false; errors: string[] };

/** The body of one surrounding markdown code fence (```json … ``` or ``` … ```), else the text as given. */
export function stripCodeFence(text: string): string {
  const fenced = /^```[\w-]*[^\S\n]*\r?\n([\s\S]*?)\r?\n?[^\S\n]*```$/.exec(text.trim());
  return fenced?.[1] === undefined ? text : fenced[1].trim();
}

export function checkOutput(text: string, format: ResponseFormat | null): OutputCheck {
  if (format === null || format.type === "text") return { ok: true, value: text, text };
  const json = stripCodeFence(text);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    return { ok: false, errors: [`the answer is not valid JSON (${toErrorMessage(error)})`] };
  }
  if (format.type === "json_object") {
    return isPlainObject(value) ? { ok: true, value, text: json } : { ok: false, errors: [`the answer must be a JSON object, got ${kindOf(value)}`] };
  }
  let units: OutputUnit[];
  try {
    const result = validatorFor(format.json_schema.schema).validate(value);
    if (result.valid) return { ok: true, value, text: json };
    units = result.errors;
  } catch (error) {
    // Only a schema that skipped checkSchemaDefinition gets here (a bad pattern, an unresolved $ref).
    return { ok: false, errors: [`the response schema cannot be used: ${error instanceof Error ? firstLine(error.message) : String(error)}`] };
  }
  return { ok: false, errors: toErrorList(units) };
}

/**
 * One validator per schema object: the agent checks every answer of a claim against the same
 * config's schema, and building one (a copy of the schema, dereferenced) is the costly part.
 * Validating is stateless, so a validator serves any number of answers.
 */
const validators = new WeakMap<object, Validator>();

function validatorFor(schema: Record<string, unknown>): Validator {
  let validator = validators.get(schema);
  if (validator === undefined) {
    validator = new Validator(cloneSchema(schema), "2020-12", false);
    validators.set(schema, validator);
  }
  return validator;
}

/**
 * Problems with a response schema itself, for a 400 at submit time: what would make the validator
 * throw or silently check nothing at run time. [] when the schema is usable.
 */
export function checkSchemaDefinition(schema: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const copy = cloneSchema(schema);
  let lookup: Record<string, Schema | boolean>;
  try {
    // What `new Validator()` runs: it throws on a bad $id or two subschemas with one URI.
    lookup = dereference(copy);
  } catch (error) {
    return [`the schema cannot be loaded: ${error instanceof Error ? firstLine(error.message) : String(error)}`];
  }
  walkSchema(copy, "#", (node, at) => {
    const ref = node.$ref;
    if (ref !== undefined) {
      if (typeof ref !== "string") problems.push(`${at}/$ref: must be a string`);
      // No network at run time: a reference must point inside this schema.
      else if (!ref.startsWith("#")) problems.push(`${at}/$ref: only references inside the schema ("#/$defs/…") are allowed, got "${ref}"`);
      else if (lookup[String(node.__absolute_ref__ ?? ref)] === undefined) problems.push(`${at}/$ref: "${ref}" points to nothing in the schema`);
    }
    if (node.$dynamicRef !== undefined) problems.push(`${at}/$dynamicRef: not supported, use $ref`);
    if (node.$recursiveRef !== undefined && node.$recursiveRef !== "#") problems.push(`${at}/$recursiveRef: must be "#"`);
    const type = node.type;
    if (type !== undefined) {
      const types = Array.isArray(type) ? type : [type];
      for (const t of types) {
        if (typeof t !== "string" || !INSTANCE_TYPES.has(t))
          problems.push(`${at}/type: ${JSON.stringify(t)} is not a JSON Schema type (${[...INSTANCE_TYPES].join(", ")})`);
      }
    }
    const required = node.required;
    if (required !== undefined && !(Array.isArray(required) && required.every((key) => typeof key === "string"))) {
      problems.push(`${at}/required: must be an array of property names`);
    }
    if (node.enum !== undefined && !Array.isArray(node.enum)) problems.push(`${at}/enum: must be an array`);
    const patterns = [
      ...(typeof node.pattern === "string" ? [{ where: `${at}/pattern`, pattern: node.pattern }] : []),
      ...(isPlainObject(node.patternProperties) ? Object.keys(node.patternProperties).map((pattern) => ({ where: `${at}/patternProperties`, pattern })) : []),
    ];
    for (const { where, pattern } of patterns) {
      // The validator compiles patterns with the `u` flag, at validation time.
      try {
        new RegExp(pattern, "u");
      } catch {
        problems.push(`${where}: ${JSON.stringify(pattern)} is not a valid regular expression`);
      }
    }
  });
  return problems;
}

/** The user message of the one repair turn after an answer failed its response_format. */
export function toRepairPrompt(errors: readonly string[]): string {
  return [
    REPAIR_MARKER,
    "Your previous answer was not valid:",
    ...errors.map((error) => `- ${error}`),
    "",
    "Answer again with ONLY the corrected JSON: no explanation, no markdown.",
  ].join("\n");
}

const INSTANCE_TYPES = new Set(["array", "boolean", "integer", "null", "number", "object", "string"]);

/**
 * Keywords whose error only says "something below failed"; the errors of the subschema follow it
 * in the list and say what. (`dependencies` with a property list is a leaf, told apart by its message.)
 */
const WRAPPER_KEYWORDS = new Set([
  "$ref",
  "$recursiveRef",
  "properties",
  "patternProperties",
  "additionalProperties",
  "unevaluatedProperties",
  "items",
  "prefixItems",
  "additionalItems",
  "unevaluatedItems",
  "allOf",
  "if",
  "dependentSchemas",
]);
const PROPERTY_WRAPPERS = new Set(["properties", "patternProperties", "additionalProperties", "unevaluatedProperties"]);

/**
 * The validator lists errors depth-first: a wrapper error, then its subschema's errors. The list
 * keeps the leaves (the most specific messages), words a `false` schema after its wrapper, and
 * drops what failed inside `contains` (an item not matching is no error by itself).
 */
function toErrorList(units: readonly OutputUnit[]): string[] {
  const messages: string[] = [];
  let skipUnder: string | null = null;
  units.forEach((unit, i) => {
    // A `false` schema reports its instance location as its keyword location (validate.js), so
    // inside `contains` it is recognised by its keyword.
    if (skipUnder !== null && (unit.keywordLocation.startsWith(skipUnder) || unit.keyword === "false")) return;
    skipUnder = null;
    if (unit.keyword === "contains") skipUnder = `${unit.keywordLocation}/`;
    if (WRAPPER_KEYWORDS.has(unit.keyword)) return;
    if (unit.keyword === "dependencies" && unit.error.includes("dependant schema")) return;
    if (unit.keyword === "false") {
      const parent = units[i - 1];
      const property = unit.instanceLocation.slice(unit.instanceLocation.lastIndexOf("/") + 1);
      const what =
        parent !== undefined && PROPERTY_WRAPPERS.has(parent.keyword)
          ? `Property "${decodePointerToken(property)}" is not allowed`
          : parent !== undefined && ["items", "prefixItems", "additionalItems", "unevaluatedItems"].includes(parent.keyword)
            ? "Item is not allowed"
            : "No value is allowed here";
      messages.push(`${unit.instanceLocation}: ${what}`);
      return;
    }
    messages.push(`${unit.instanceLocation}: ${unit.error.replace(/\.$/, "")}`);
  });
  const unique = [...new Set(messages)];
  if (unique.length <= MAX_OUTPUT_ERRORS) return unique;
  return [...unique.slice(0, MAX_OUTPUT_ERRORS - 1), `… and ${unique.length - (MAX_OUTPUT_ERRORS - 1)} more errors`];
}

function decodePointerToken(token: string): string {
  let decoded = token;
  try {
    decoded = decodeURIComponent(token);
  } catch {
    // Kept as encoded.
  }
  return decoded.replace(/~1/g, "/").replace(/~0/g, "~");
}

/**
 * Calls `visit` on every subschema the validator reads, as it reads them (the keywords of
 * dereference.js); `at` is the node's JSON pointer in the `#/…` form the errors use.
 */
function walkSchema(node: unknown, at: string, visit: (node: Record<string, unknown>, at: string) => void): void {
  if (!isPlainObject(node)) return;
  visit(node, at);
  for (const [key, child] of Object.entries(node)) {
    const here = `${at}/${encodePointerToken(key)}`;
    if (SCHEMA_MAP_KEYWORDS.has(key) && isPlainObject(child)) {
      for (const [name, sub] of Object.entries(child)) walkSchema(sub, `${here}/${encodePointerToken(name)}`, visit);
    } else if (SCHEMA_ARRAY_KEYWORDS.has(key) && Array.isArray(child)) {
      for (const [i, sub] of child.entries()) walkSchema(sub, `${here}/${i}`, visit);
    } else if (SCHEMA_KEYWORDS.has(key)) {
      walkSchema(child, here, visit);
    }
  }
}
const SCHEMA_KEYWORDS = new Set([
  "items",
  "additionalItems",
  "unevaluatedItems",
  "contains",
  "additionalProperties",
  "unevaluatedProperties",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
]);
const SCHEMA_ARRAY_KEYWORDS = new Set(["prefixItems", "items", "allOf", "anyOf", "oneOf"]);
const SCHEMA_MAP_KEYWORDS = new Set(["$defs", "definitions", "properties", "patternProperties", "dependentSchemas", "dependencies"]);

const encodePointerToken = (key: string): string => key.replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * A deep copy: the validator marks the schema objects it is given (non-enumerable properties), and
 * the spec's schema stays untouched.
 */
function cloneSchema(schema: Record<string, unknown>): Schema {
  return JSON.parse(JSON.stringify(schema)) as Schema;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
}

function firstLine(text: string): string {
  return text.split("\n", 1)[0] ?? text;
}
