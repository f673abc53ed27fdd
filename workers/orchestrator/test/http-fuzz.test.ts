// Hardened input: 1,100 generated malformed requests (seeded, so every run sends the same ones) —
// bad auth headers, wrong types, huge and deep bodies, bad unicode, garbage ids, cursors and query
// parameters, bad cron, wrong media types, bad tenant and key bodies — against the real app. Every
// one must be a 4xx with the JSON error shape and a request id; none a 5xx, a crash or a hang.
import { describe, expect, it } from "vitest";
import { createPrng, type Prng } from "../../../dev/mock-model/prng.ts";
import { callApi, createTenantKey, ORIGIN, TOKEN_A, validSpec } from "./call-api.ts";
import { ErrorBodySchema } from "./error-body.ts";
import { exports } from "cloudflare:workers";

const SEED = 0x5eed_10;

interface Case {
  category: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

const pick = <T>(rng: Prng, items: readonly T[]): T => items[Math.floor(rng.next() * items.length)] as T;
const int = (rng: Prng, min: number, max: number): number => min + Math.floor(rng.next() * (max - min + 1));
const hex = (rng: Prng, n: number): string => Array.from({ length: n }, () => "0123456789abcdef"[int(rng, 0, 15)]).join("");

function randomText(rng: Prng, length: number, alphabet = "abcXYZ019 -_.~!$&'()*+,;=:@%/?#[]{}\"\\<>^`|"): string {
  return Array.from({ length }, () => alphabet[int(rng, 0, alphabet.length - 1)]).join("");
}

const auth = (token = TOKEN_A): Record<string, string> => ({ authorization: `Bearer ${token}` });
const json = (token = TOKEN_A): Record<string, string> => ({ ...auth(token), "content-type": "application/json" });

function nest(depth: number, leaf: unknown = 1, kind: "array" | "object" | "mixed" = "mixed"): string {
  let text = JSON.stringify(leaf);
  for (let i = 0; i < depth; i++) {
    const asArray = kind === "array" || (kind === "mixed" && i % 2 === 0);
    text = asArray ? `[${text}]` : `{"k":${text}}`;
  }
  return text;
}

// ── generators, one per category ────────────────────────────────────────────────────────────────

const AUTH_TARGETS: readonly [string, string][] = [
  ["GET", "/v1/swarms"],
  ["POST", "/v1/swarms"],
  ["GET", "/v1/me"],
  ["GET", "/v1/keys"],
  ["POST", "/v1/tenants"],
  ["GET", "/v1/audit"],
  ["DELETE", "/v1/keys/key_aaaaaaaaaaaaaaaa"],
];

function badAuth(rng: Prng): Case {
  const forms: (() => Record<string, string>)[] = [
    () => ({}),
    () => ({ authorization: "" }),
    () => ({ authorization: "Bearer" }),
    () => ({ authorization: "Bearer " }),
    () => ({ authorization: `Bearer ${randomText(rng, int(rng, 1, 80), "abcdefXYZ0123456789-._~+/")}` }),
    () => ({ authorization: `Bearer es_local_${hex(rng, 48)}` }),
    () => ({ authorization: `Bearer es_live_${hex(rng, 48)}` }),
    () => ({ authorization: `Bearer es_local_${hex(rng, int(rng, 0, 47))}` }),
    () => ({ authorization: `Bearer es_local_${hex(rng, 49)}` }),
    () => ({ authorization: `Bearer es_local_${hex(rng, 47)}G` }),
    () => ({ authorization: `Bearer ${TOKEN_A}x` }),
    () => ({ authorization: `Bearer ${TOKEN_A.slice(0, -1)}` }),
    () => ({ authorization: `Bearer ${TOKEN_A} ${TOKEN_A}` }),
    () => ({ authorization: `Basic ${btoa(`u:${TOKEN_A}`)}` }),
    () => ({ authorization: TOKEN_A }),
    () => ({ authorization: `Token ${TOKEN_A}` }),
    () => ({ authorization: `Bearer ${"a".repeat(int(rng, 4_000, 8_000))}` }),
    // Header values are bytes; workerd warns (loudly) on non-ASCII ones, so UTF-8 arrives percent-encoded, as a client would send it.
    () => ({ authorization: `Bearer ${encodeURIComponent(randomText(rng, int(rng, 1, 40), "éüñßøå\u00a0\u00ff"))}` }),
    () => ({ authorization: `Bearer '; DROP TABLE api_keys; --` }),
    () => ({ authorization: `Bearer es_local_${hex(rng, 8)}' OR '1'='1` }),
    () => ({ authorization: `Bearer ${TOKEN_A}`.toUpperCase() }),
  ];
  const [method, path] = pick(rng, AUTH_TARGETS);
  const headers = pick(rng, forms)();
  return {
    category: "bad auth header",
    method,
    path,
    headers: method === "GET" || method === "DELETE" ? headers : { ...headers, "content-type": "application/json" },
    body: method === "POST" ? JSON.stringify(validSpec()) : undefined,
  };
}

const WRONG_FIELDS: Record<string, readonly unknown[]> = {
  name: [123, null, true, [], {}, "", "x".repeat(101)],
  model: [123, null, true, {}, "", [], [{ model: "m", weight: 0 }], [{ model: 5, weight: 1 }]],
  tasks: ["x", 5, null, {}, [], [1], [{}], [{ prompt: 5 }], [{ prompt: "" }], [{ prompt: "p", extra: 1 }], [{ prompt: "p", id: 7 }]],
  system: [5, true, [], {}],
  limits: ["x", 5, [], { concurrency: "a" }, { concurrency: 0 }, { concurrency: -1 }, { max_attempts: 11 }, { timeout_s: 0 }, { unknown_limit: 1 }],
  budget: ["x", 5, {}, { max_usd: "1" }, { max_usd: -1 }, { max_tokens: 1.5 }],
  metadata: ["x", 5, [], true, { k: {} }, { k: [] }],
  tools: ["x", 5, {}, [5], [{}], ["no_such_tool"]],
  http_allowlist: ["x", 5, [5], ["bad host!"], [""]],
  reduce: ["x", 5, { kind: "nope" }, []],
  parallel_tool_calls: ["x", 5, {}],
  response_format: ["x", 5, { type: "nope" }, []],
  fallback: ["x", 5, [5], {}],
  planner: [{ max_tasks: 5 }],
};

function wrongTypes(rng: Prng): Case {
  const spec: Record<string, unknown> = validSpec();
  const fields = Object.keys(WRONG_FIELDS);
  for (let i = int(rng, 1, 3); i > 0; i--) {
    const field = pick(rng, fields);
    spec[field] = pick(rng, WRONG_FIELDS[field] ?? [null]);
  }
  if (rng.next() < 0.1) spec[`unknown_${int(rng, 0, 99)}`] = 1;
  const target = pick(rng, ["/v1/swarms", "/v1/swarms?dry_run=1", "/v1/swarms/estimate", "/v1/schedules"]);
  const body = target === "/v1/schedules" ? { name: "fuzz", cron: "0 * * * *", spec } : spec;
  return { category: "wrong types", method: "POST", path: target, headers: json(), body: JSON.stringify(body) };
}

const MAX_BODY_BYTES = 8_388_608; // wrangler.toml

function huge(rng: Prng, i: number): Case {
  if (i % 6 === 0) {
    // Over MAX_BODY_BYTES: 413 before a byte is parsed.
    return {
      category: "huge body",
      method: "POST",
      path: pick(rng, ["/v1/swarms", "/v1/schedules", "/v1/tenants", "/v1/keys"]),
      headers: json(),
      body: `{"name":"${"x".repeat(MAX_BODY_BYTES)}"}`,
    };
  }
  const spec = validSpec();
  const variants: (() => unknown)[] = [
    () => ({ ...spec, name: "n".repeat(int(rng, 101, 200_000)) }),
    () => ({ ...spec, tasks: [{ prompt: "p".repeat(200_001) }] }),
    () => ({ ...spec, tasks: Array.from({ length: 10_001 }, (_, k) => ({ prompt: `t${k}` })) }),
    () => ({ ...spec, system: "s".repeat(200_001) }),
    () => ({ ...spec, metadata: { k: "v".repeat(1_001) } }),
    () => ({ ...spec, tasks: [{ id: "i".repeat(int(rng, 201, 5_000)), prompt: "p" }] }),
  ];
  return { category: "huge body", method: "POST", path: "/v1/swarms", headers: json(), body: JSON.stringify(pick(rng, variants)()) };
}

function deep(rng: Prng): Case {
  const depth = pick(rng, [65, 66, 100, 1_000, 10_000, int(rng, 65, 5_000)]);
  const kind = pick(rng, ["array", "object", "mixed"] as const);
  const value = nest(depth, 1, kind);
  const bodies = [
    value,
    `{"name":"x","model":"mock-1","tasks":[{"prompt":"p"}],"metadata":${value}}`,
    `{"name":"x","model":"mock-1","tasks":${value}}`,
    `{"name":"t","limits":${value}}`,
    `{"name":"x","cron":"0 * * * *","spec":${value}}`,
  ];
  const path = pick(rng, ["/v1/swarms", "/v1/swarms/estimate", "/v1/schedules", "/v1/tenants", "/v1/keys"]);
  return { category: "deep body", method: "POST", path, headers: json(), body: pick(rng, bodies) };
}

const encoder = new TextEncoder();

function badUnicode(rng: Prng): Case {
  const variants: (() => Case)[] = [
    // Invalid UTF-8 where JSON expects structure: it decodes to U+FFFD, which is no JSON token.
    () => {
      const bytes = [
        ...encoder.encode('{"name":'),
        ...pick(rng, [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80]]),
        ...encoder.encode("}"),
      ];
      return {
        category: "bad unicode",
        method: "POST",
        path: pick(rng, ["/v1/swarms", "/v1/tenants", "/v1/keys", "/v1/schedules"]),
        headers: json(),
        body: new Uint8Array(bytes),
      };
    },
    () => ({
      category: "bad unicode",
      method: "GET",
      path: `/v1/swarms/${pick(rng, ["%FF%FE", "%C0%AF", "%ED%A0%80", "sw_%F0%9F%98%80", encodeURIComponent("ｓｗ＿ａａａ")])}`,
      headers: auth(),
    }),
    () => ({
      category: "bad unicode",
      method: "GET",
      path: `/v1/swarms?limit=${encodeURIComponent(pick(rng, ["１０", "٣", "1\u200b", "²"]))}`,
      headers: auth(),
    }),
    () => ({
      category: "bad unicode",
      method: "POST",
      path: "/v1/schedules",
      headers: json(),
      body: JSON.stringify({ name: "u", cron: pick(rng, ["０ * * * *", "* * * * ＊", "٣ * * * *", "*\u00a0* * * *"]), spec: validSpec() }),
    }),
    () => ({
      category: "bad unicode",
      method: "POST",
      path: "/v1/tenants",
      headers: json(),
      body: JSON.stringify({ name: `team${pick(rng, ["\u0000", "\u0007", "\u001b[31m", "\u007f", "\r\nx"])}` }),
    }),
    () => ({
      category: "bad unicode",
      method: "POST",
      path: "/v1/keys",
      headers: json(),
      body: JSON.stringify({ tenant_id: pick(rng, ["tn_défault", "tn_\ud800", "ｔｎ_default"]), name: "k", scopes: ["read"] }),
    }),
    () => ({
      category: "bad unicode",
      method: "POST",
      path: "/v1/keys",
      headers: json(),
      body: JSON.stringify({ tenant_id: "tn_default", name: "k", scopes: [pick(rng, ["réad", "ＡＤＭＩＮ", "run\u0000"])] }),
    }),
    () => ({
      category: "bad unicode",
      method: "POST",
      path: "/v1/swarms",
      headers: json(),
      body: `{"name":"\\ud800","model":"mock-1","tasks":[{"prompt":"\\udfff","id":"\\ud800"}]}`,
    }),
  ];
  return pick(rng, variants)();
}

function garbageId(rng: Prng): string {
  const raw = pick(rng, [
    () => randomText(rng, int(rng, 1, 40)),
    () => `sw_${randomText(rng, 20, "abcdefghijklmnopqrstuvwxyz234567")}`,
    () => `sw_${randomText(rng, int(rng, 0, 30), "ABC0189")}`,
    () => `tn_${randomText(rng, int(rng, 1, 41), "abcdefghij0123456789")}`,
    () => `key_${randomText(rng, 16, "abcdefghijklmnopqrstuvwxyz234567")}`,
    () => `sch_${randomText(rng, 16, "abcdefghijklmnopqrstuvwxyz234567")}`,
    () => "x".repeat(int(rng, 300, 5_000)),
    () => pick(rng, ["..", ".", "%00", "null", "undefined", "0", "-1", "' OR 1=1 --", "{{id}}", "<script>", "sw_*", "%2e%2e"]),
  ])();
  return rng.next() < 0.8 ? encodeURIComponent(raw).replaceAll(".", "%2E") : raw.replace(/[?#/\\]/g, "");
}

function garbageIds(rng: Prng): Case {
  const id = garbageId(rng);
  const routes: [string, string, unknown?][] = [
    ["GET", `/v1/swarms/${id}`],
    ["GET", `/v1/swarms/${id}/results`],
    ["GET", `/v1/swarms/${id}/plan`],
    ["GET", `/v1/swarms/${id}/events`],
    ["POST", `/v1/swarms/${id}/cancel`],
    ["DELETE", `/v1/schedules/${id}`],
    ["GET", `/v1/tenants/${id}`],
    ["PATCH", `/v1/tenants/${id}`, { name: "x" }],
    ["DELETE", `/v1/tenants/${id}`],
    ["DELETE", `/v1/keys/${id}`],
    ["POST", `/v1/keys/${id}/rotate`],
  ];
  const [method, path, body] = pick(rng, routes);
  return { category: "garbage id", method, path, headers: body === undefined ? auth() : json(), body: body === undefined ? undefined : JSON.stringify(body) };
}

const BAD_NUMBERS = ["0", "-1", "abc", "1e3", "", " 5", "1.5", "0x10", "99999999", "NaN", "Infinity", "1,2"];

function badQueries(rng: Prng, swarmId: string): Case {
  const junk = () => encodeURIComponent(randomText(rng, int(rng, 1, 60)));
  const variants: (() => string)[] = [
    () => `/v1/swarms?cursor=${junk()}`,
    () => `/v1/swarms?limit=${encodeURIComponent(pick(rng, [...BAD_NUMBERS, "101"]))}`,
    () => `/v1/swarms/${swarmId}/results?cursor=${encodeURIComponent(pick(rng, ["abc", "-1", "1234567890123", "", "1.0", randomText(rng, 5)]))}`,
    () => `/v1/swarms/${swarmId}/results?limit=${encodeURIComponent(pick(rng, [...BAD_NUMBERS, "1001"]))}`,
    () => `/v1/usage?from=${junk()}`,
    () => `/v1/usage?to=${encodeURIComponent(pick(rng, ["yesterday", "2026-13-01", "2026-02-30T25:00:00Z", "-1"]))}`,
    () => `/v1/usage?group_by=${encodeURIComponent(pick(rng, ["tenant", "key", "", "MODEL", "model,day"]))}`,
    () => `/v1/usage?from=2026-02-01&to=2026-01-01`,
    () => `/v1/usage?${junk().replace(/%3D|=/g, "")}x=1`,
    () => `/v1/audit?cursor=${junk()}`,
    () => `/v1/audit?limit=${encodeURIComponent(pick(rng, [...BAD_NUMBERS, "501"]))}`,
    () => `/v1/audit?tenant_id=${junk()}`,
    () => `/v1/audit?unknown_${int(rng, 0, 99)}=1`,
    () => `/v1/keys?tenant_id=${junk()}`,
    () => `/v1/keys?other=1`,
  ];
  if (rng.next() < 0.15) {
    const query = pick(rng, [
      `dry_run=${pick(rng, ["maybe", "2", "yes", ""])}`,
      "jobs_per_day=5",
      `dry_run=1&jobs_per_day=${pick(rng, ["abc", "1e3", "-1", "", "0x10", "NaN", "99999999", " 5", "1,2"])}`,
      "dry_run=1&days_per_month=3",
      `x_${int(rng, 0, 9)}=1`,
    ]);
    return { category: "bad cursor or query", method: "POST", path: `/v1/swarms?${query}`, headers: json(), body: JSON.stringify(validSpec()) };
  }
  return { category: "bad cursor or query", method: "GET", path: pick(rng, variants)(), headers: auth() };
}

const GOOD_CRON_FIELDS = ["*", "0", "*/5", "1-3", "1,2", "5"];
const BAD_CRON_FIELDS = ["60", "-1", "*/0", "x", "1-", "99", "1,,2", "L", "?", "W", "#", "*/", "1-0x", "3/2/1", "2147483648"];

function badCron(rng: Prng): Case {
  const variants: (() => unknown)[] = [
    () => {
      const fields = Array.from({ length: 5 }, () => pick(rng, GOOD_CRON_FIELDS));
      fields[int(rng, 0, 4)] = pick(rng, BAD_CRON_FIELDS);
      return fields.join(" ");
    },
    () => Array.from({ length: pick(rng, [1, 2, 3, 4, 6, 7]) }, () => pick(rng, GOOD_CRON_FIELDS)).join(" "),
    () => pick(rng, ["", " ", "@never", "@every 5m", "@HOURLY!", "* * * * * *", "0 0 31 2 *x"]),
    () => "* ".repeat(int(rng, 101, 400)),
    () => pick(rng, [5, null, true, [], {}, ["* * * * *"]]),
  ];
  return {
    category: "bad cron",
    method: "POST",
    path: "/v1/schedules",
    headers: json(),
    body: JSON.stringify({ name: "cron fuzz", cron: pick(rng, variants)(), spec: validSpec() }),
  };
}

function badMedia(rng: Prng): Case {
  const path = pick(rng, ["/v1/swarms", "/v1/swarms/estimate", "/v1/schedules", "/v1/tenants", "/v1/keys"]);
  const variants: (() => Case)[] = [
    () => ({
      category: "bad media or syntax",
      method: "POST",
      path,
      headers: {
        ...auth(),
        "content-type": pick(rng, [
          "text/plain",
          "application/xml",
          "multipart/form-data; boundary=x",
          "application/x-www-form-urlencoded",
          "application/jsonx",
          "json",
        ]),
      },
      body: JSON.stringify(validSpec()),
    }),
    () => ({ category: "bad media or syntax", method: "POST", path, headers: auth(), body: JSON.stringify(validSpec()) }),
    () => ({
      category: "bad media or syntax",
      method: "POST",
      path,
      headers: json(),
      body: pick(rng, ["", "{", "}", "[", "{'name':'x'}", '{"name":"x",}', "NaN", '{"a":1}{"b":2}', "undefined", '{"name": "x"', "\u0000", "nul"]),
    }),
    () => ({ category: "bad media or syntax", method: "POST", path, headers: json(), body: JSON.stringify(validSpec()).slice(0, int(rng, 1, 40)) }),
    () => ({
      category: "bad media or syntax",
      method: pick(rng, ["PUT", "PATCH"]),
      path: pick(rng, ["/v1/swarms", "/v1/keys", "/v1/audit", "/v1/me"]),
      headers: json(),
      body: "{}",
    }),
  ];
  return pick(rng, variants)();
}

function badTenantOrKey(rng: Prng): Case {
  const variants: (() => [string, string, unknown])[] = [
    () => ["POST", "/v1/tenants", { name: pick(rng, [5, null, "", [], {}, "n".repeat(101)]) }],
    () => ["POST", "/v1/tenants", {}],
    () => ["POST", "/v1/tenants", { name: "t", extra: true }],
    () => [
      "POST",
      "/v1/tenants",
      {
        name: "t",
        limits: pick(rng, [
          "x",
          5,
          [],
          { rpm: 0 },
          { rpm: "60" },
          { rpm: 1.5 },
          { rpm: 1_000_001 },
          { max_concurrent_swarms: -1 },
          { monthly_usd: 0 },
          { models: [] },
          { models: [5] },
          { burst: 1 },
        ]),
      },
    ],
    () => [
      "PATCH",
      "/v1/tenants/tn_default",
      pick(rng, [{}, { name: "" }, { limits: { rpm: "x" } }, { limits: "none" }, { extra: 1 }, { limits: { nope: null } }]),
    ],
    () => [
      "POST",
      "/v1/keys",
      {
        tenant_id: pick(rng, ["tn_default", "tn_nobody0000000000"]),
        name: "k",
        scopes: pick(rng, [[], "admin", ["owner"], ["read", "read"], [1], null, ["admin", "run", "read", "read"]]),
      },
    ],
    () => ["POST", "/v1/keys", { tenant_id: pick(rng, [5, null, "", "default", "tn_", "TN_DEFAULT"]), name: "k", scopes: ["read"] }],
    () => [
      "POST",
      "/v1/keys",
      {
        tenant_id: "tn_default",
        name: "k",
        scopes: ["read"],
        expires_at: pick(rng, ["tomorrow", "2001-01-01T00:00:00Z", 5, "2027-13-01T00:00:00Z", "2027-01-01"]),
      },
    ],
    () => ["POST", "/v1/keys", { tenant_id: "tn_default", name: "k", scopes: ["read"], rpm: pick(rng, [0, -5, "10", 1.5, 10_000_000]) }],
    () => ["POST", "/v1/keys", { tenant_id: "tn_default", scopes: ["read"] }],
    () => ["POST", "/v1/keys", { tenant_id: "tn_default", name: "k", scopes: ["read"], key: "es_local_chosen_by_me" }],
  ];
  const [method, path, body] = pick(rng, variants)();
  return { category: "bad tenant or key body", method, path, headers: json(), body: JSON.stringify(body) };
}

function generateCases(swarmId: string): Case[] {
  const rng = createPrng(SEED);
  const plan: [number, (i: number) => Case][] = [
    [150, () => badAuth(rng)],
    [200, () => wrongTypes(rng)],
    [30, (i) => huge(rng, i)],
    [60, () => deep(rng)],
    [100, () => badUnicode(rng)],
    [150, () => garbageIds(rng)],
    [150, () => badQueries(rng, swarmId)],
    [100, () => badCron(rng)],
    [60, () => badMedia(rng)],
    [100, () => badTenantOrKey(rng)],
  ];
  return plan.flatMap(([n, make]) => Array.from({ length: n }, (_, i) => make(i)));
}

async function send(c: Case): Promise<Response> {
  return exports.default.fetch(new Request(`${ORIGIN}${c.path}`, { method: c.method, headers: c.headers, body: c.body }));
}

describe("1,100 generated malformed requests", () => {
  it("answers every one with a 4xx and the error shape, none with a 5xx", async () => {
    // A real swarm, so that bad cursors of its results reach the query check, not a 404.
    const created = await callApi("/v1/swarms", { json: validSpec() });
    expect(created.status).toBe(202);
    const { id } = (await created.json()) as { id: string };
    // A tenant with a key, so the tenant routes have something real next to the garbage.
    await createTenantKey({ name: "fuzz neighbour" });

    const cases = generateCases(id);
    expect(cases.length).toBeGreaterThanOrEqual(1_000);
    const counts = new Map<string, Map<number, number>>();
    const failures: string[] = [];
    for (const c of cases) {
      const response = await send(c);
      const text = await response.text();
      const byStatus = counts.get(c.category) ?? new Map<number, number>();
      byStatus.set(response.status, (byStatus.get(response.status) ?? 0) + 1);
      counts.set(c.category, byStatus);
      const describe = `${c.category}: ${c.method} ${c.path.slice(0, 120)} → ${response.status} ${text.slice(0, 160)}`;
      if (response.status < 400 || response.status >= 500) {
        failures.push(describe);
        continue;
      }
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        failures.push(`${describe} (not JSON)`);
        continue;
      }
      const body = ErrorBodySchema.safeParse(parsed);
      if (!response.headers.get("content-type")?.startsWith("application/json") || !body.success || body.data.error.request_id === undefined) {
        failures.push(`${describe} (not the error shape)`);
      }
      if (response.status === 429 && response.headers.get("retry-after") === null) failures.push(`${describe} (429 without Retry-After)`);
    }
    const summary = [...counts].map(([category, byStatus]) => `${category}: ${[...byStatus].map(([s, n]) => `${s}×${n}`).join(" ")}`);
    console.log(`fuzz: ${cases.length} requests (seed ${SEED}); ${summary.join("; ")}`);
    expect(failures.slice(0, 25), `${failures.length} requests were not a 4xx with the error shape`).toEqual([]);
  }, 120_000);
});
