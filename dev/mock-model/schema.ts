// Builds a deterministic JSON value that validates against a (common-subset) JSON Schema.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = Record<string, unknown>;

const MAX_DEPTH = 12;

const isObj = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/**
 * Supports: type (incl. arrays of types / nullable), const, enum (first value), properties
 * (all emitted; `mock: true` added when additional properties are unrestricted), items/prefixItems,
 * minItems, anyOf/oneOf (first branch), allOf (objects merged), $ref into #/$defs or #/definitions,
 * string minLength/maxLength/format, number minimum/maximum/exclusive bounds/multipleOf.
 * `tag` seeds string values so different requests get different (but deterministic) strings.
 */
export function valueForSchema(schema: unknown, tag: string): Json {
  return gen(schema, isObj(schema) ? schema : {}, tag, "value", 0);
}

function gen(schema: unknown, root: Schema, tag: string, name: string, depth: number): Json {
  if (schema === true || schema === undefined) return { mock: true };
  if (!isObj(schema) || depth > MAX_DEPTH) return null;
  const ref = schema.$ref;
  if (typeof ref === "string") return gen(resolveRef(ref, root), root, tag, name, depth + 1);
  if ("const" in schema) return schema.const as Json;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0] as Json;
  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0) {
      const nonNull = branches.find((b) => !(isObj(b) && b.type === "null"));
      return gen(nonNull ?? branches[0], root, tag, name, depth + 1);
    }
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    return gen(mergeAllOf(schema, root), root, tag, name, depth + 1);
  }
  switch (pickType(schema)) {
    case "object":
      return genObject(schema, root, tag, depth);
    case "array":
      return genArray(schema, root, tag, name, depth);
    case "string":
      return genString(schema, tag, name);
    case "integer":
      return genNumber(schema, true);
    case "number":
      return genNumber(schema, false);
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return { mock: true };
  }
}

function pickType(schema: Schema): string | undefined {
  const t = schema.type;
  if (typeof t === "string") return t;
  if (Array.isArray(t)) {
    const first = t.find((x) => x !== "null") ?? t[0];
    return typeof first === "string" ? first : undefined;
  }
  if (isObj(schema.properties)) return "object";
  if (schema.items !== undefined || schema.prefixItems !== undefined) return "array";
  return undefined;
}

function resolveRef(ref: string, root: Schema): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return {};
  let cur: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    cur = isObj(cur) ? cur[key] : undefined;
  }
  return cur ?? {};
}

function mergeAllOf(schema: Schema, root: Schema): Schema {
  const merged: Schema = { ...schema };
  delete merged.allOf;
  const properties: Schema = isObj(schema.properties) ? { ...schema.properties } : {};
  const required = new Set<string>(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : []);
  for (const part of schema.allOf as unknown[]) {
    const p = isObj(part) && typeof part.$ref === "string" ? resolveRef(part.$ref, root) : part;
    if (!isObj(p)) continue;
    for (const [k, v] of Object.entries(p)) {
      if (k === "properties" && isObj(v)) {
        Object.assign(properties, v);
      } else if (k === "required" && Array.isArray(v)) {
        for (const r of v) if (typeof r === "string") required.add(r);
      } else if (!(k in merged)) {
        merged[k] = v;
      }
    }
  }
  if (Object.keys(properties).length > 0) merged.properties = properties;
  if (required.size > 0) merged.required = [...required];
  return merged;
}

function genObject(schema: Schema, root: Schema, tag: string, depth: number): Json {
  const out: { [k: string]: Json } = {};
  const props = isObj(schema.properties) ? schema.properties : {};
  const extraOk = schema.additionalProperties === undefined || schema.additionalProperties === true;
  if (extraOk && schema.patternProperties === undefined && !("mock" in props)) out.mock = true;
  for (const [key, sub] of Object.entries(props)) out[key] = gen(sub, root, tag, key, depth + 1);
  // Required names without a property schema (allowed by JSON Schema) still need a value.
  if (Array.isArray(schema.required)) {
    for (const r of schema.required) if (typeof r === "string" && !(r in out)) out[r] = gen(schema.additionalProperties, root, tag, r, depth + 1);
  }
  return out;
}

function genArray(schema: Schema, root: Schema, tag: string, name: string, depth: number): Json {
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
  const minItems = Math.max(1, num(schema.minItems) ?? 1, prefix.length);
  const maxItems = num(schema.maxItems);
  const count = maxItems !== undefined ? Math.min(minItems, maxItems) : minItems;
  const out: Json[] = [];
  for (let i = 0; i < count; i++) {
    const itemSchema = i < prefix.length ? prefix[i] : schema.items === undefined ? {} : schema.items;
    out.push(gen(itemSchema === false ? {} : itemSchema, root, tag, name, depth + 1));
  }
  return out;
}

const FORMATS: Record<string, string> = {
  "date-time": "2025-01-01T00:00:00Z",
  date: "2025-01-01",
  time: "00:00:00Z",
  email: "mock@example.com",
  uri: "https://example.com/mock",
  url: "https://example.com/mock",
  uuid: "00000000-0000-4000-8000-000000000000",
  hostname: "mock.example.com",
  ipv4: "127.0.0.1",
  ipv6: "::1",
};

function genString(schema: Schema, tag: string, name: string): string {
  const format = typeof schema.format === "string" ? FORMATS[schema.format] : undefined;
  let s = format ?? `[mock] ${name} ${tag}`;
  const min = num(schema.minLength) ?? 0;
  const max = num(schema.maxLength);
  while (s.length < min) s += " mock";
  if (max !== undefined && s.length > max) s = s.slice(0, max);
  return s;
}

/** The value closest to 0 that satisfies the bounds (and multipleOf / integer grid). */
function genNumber(schema: Schema, integer: boolean): number {
  const min = num(schema.minimum);
  const max = num(schema.maximum);
  const exMin = num(schema.exclusiveMinimum);
  const exMax = num(schema.exclusiveMaximum);
  const multiple = num(schema.multipleOf);
  const step = multiple !== undefined && multiple > 0 ? multiple : integer ? 1 : undefined;
  if (step !== undefined) {
    let loK = -Infinity;
    let hiK = Infinity;
    if (min !== undefined) loK = Math.ceil(min / step - 1e-9);
    if (exMin !== undefined) loK = Math.max(loK, Math.floor(exMin / step + 1e-9) + 1);
    if (max !== undefined) hiK = Math.floor(max / step + 1e-9);
    if (exMax !== undefined) hiK = Math.min(hiK, Math.ceil(exMax / step - 1e-9) - 1);
    const k = Math.min(Math.max(0, loK), hiK);
    return Number((k * step).toPrecision(12));
  }
  const lo = Math.max(min ?? -Infinity, exMin ?? -Infinity);
  const hi = Math.min(max ?? Infinity, exMax ?? Infinity);
  const loOpen = exMin !== undefined && exMin >= (min ?? -Infinity);
  const hiOpen = exMax !== undefined && exMax <= (max ?? Infinity);
  const inside = (x: number): boolean => (loOpen ? x > lo : x >= lo) && (hiOpen ? x < hi : x <= hi);
  if (inside(0)) return 0;
  const mid = (lo + hi) / 2;
  if (0 < lo) return loOpen ? (Number.isFinite(hi) ? mid : lo + 1) : lo;
  return hiOpen ? (Number.isFinite(lo) ? mid : hi - 1) : hi;
}

/**
 * Text that breaks `schema`, for invalid-structured-output tests: the valid value with its first
 * required property dropped; else with a property of the wrong type; else with an extra property
 * where none are allowed; else a top-level value of the wrong type; else (nothing to violate, e.g.
 * `{}`) text that is not JSON at all.
 */
export function invalidJsonForSchema(schema: unknown, tag: string): string {
  const root = isObj(schema) ? schema : {};
  const s = resolveTop(schema, root);
  const notJson = `[mock] not JSON (invalid_json ${tag})`;
  if (!isObj(s)) return notJson;
  const value = gen(s, root, tag, "value", 0);
  if (pickType(s) === "object" && isObj(value)) {
    const required = Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === "string") : [];
    const first = required[0];
    if (first !== undefined) {
      delete value[first];
      return JSON.stringify(value);
    }
    for (const [key, sub] of Object.entries(isObj(s.properties) ? s.properties : {})) {
      const wrong = wrongTypeFor(sub, root);
      if (wrong !== undefined) {
        value[key] = wrong;
        return JSON.stringify(value);
      }
    }
    if (s.additionalProperties === false) return JSON.stringify({ ...value, mock_unexpected: true });
    return notJson;
  }
  const wrong = wrongTypeFor(s, root);
  return wrong === undefined ? notJson : JSON.stringify(wrong);
}

/** Follows top-level `$ref`s and merges `allOf`, so the schema's own keywords can be read. */
function resolveTop(schema: unknown, root: Schema): unknown {
  let s = schema;
  for (let i = 0; i < MAX_DEPTH && isObj(s); i++) {
    if (typeof s.$ref === "string") s = resolveRef(s.$ref, root);
    else if (Array.isArray(s.allOf) && s.allOf.length > 0) s = mergeAllOf(s, root);
    else break;
  }
  return s;
}

/** JSON types a schema accepts, or undefined when it may accept anything. */
function acceptedTypes(schema: unknown, root: Schema, depth = 0): Set<string> | undefined {
  const s = resolveTop(schema, root);
  if (!isObj(s) || depth > MAX_DEPTH) return undefined;
  for (const key of ["anyOf", "oneOf"] as const) {
    const branches = s[key];
    if (Array.isArray(branches) && branches.length > 0) {
      const all = new Set<string>();
      for (const b of branches) {
        const t = acceptedTypes(b, root, depth + 1);
        if (t === undefined) return undefined;
        for (const x of t) all.add(x);
      }
      return all;
    }
  }
  const values = "const" in s ? [s.const] : Array.isArray(s.enum) ? s.enum : undefined;
  if (values !== undefined) return new Set(values.map((v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" ? "number" : typeof v)));
  const t = s.type;
  const types = typeof t === "string" ? [t] : Array.isArray(t) ? t.filter((x): x is string => typeof x === "string") : [];
  if (types.length === 0) {
    const inferred = pickType(s);
    return inferred === undefined ? undefined : new Set([inferred]);
  }
  return new Set(types.map((x) => (x === "integer" ? "number" : x)));
}

/** A value of a JSON type the schema does not accept, or undefined when it accepts any type. */
function wrongTypeFor(schema: unknown, root: Schema): Json | undefined {
  const accepted = acceptedTypes(schema, root);
  if (accepted === undefined) return undefined;
  const candidates: Array<[string, Json]> = [
    ["number", 12345],
    ["string", "[mock] wrong type"],
    ["boolean", true],
    ["object", { mock: "wrong type" }],
    ["array", []],
  ];
  return candidates.find(([type]) => !accepted.has(type))?.[1];
}
