// GET /openapi.json: the document matches the routes the app really serves (both ways), and every
// example it documents validates against its own schema and the zod schema the handler uses.
import { Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { createApp } from "../app.ts";
import { OPERATIONS } from "../openapi-document.ts";
import { callApi } from "./call-api.ts";

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: object; examples: Record<string, { value: unknown }> }> } }>>;
  components: object;
};

async function readDocument(): Promise<Doc> {
  const response = await callApi("/openapi.json", { token: null });
  expect(response.status).toBe(200);
  return (await response.json()) as Doc;
}

/** Hono's `:id` as OpenAPI's `{id}`. */
const toOpenApiPath = (path: string): string => path.replace(/:(\w+)/g, "{$1}").replace(/(.)\/$/, "$1");

describe("GET /openapi.json", () => {
  it("is OpenAPI 3.1, served without a token", async () => {
    const doc = await readDocument();
    expect(doc.openapi).toBe("3.1.0");
  });

  it("documents exactly the routes the app serves", async () => {
    const served = new Set(
      createApp()
        .routes.filter((r) => r.method !== "ALL" && r.path !== "/openapi.json")
        .map((r) => `${r.method.toLowerCase()} ${toOpenApiPath(r.path)}`),
    );
    const doc = await readDocument();
    const documented = new Set(Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m} ${path}`)));
    expect([...served].sort()).toEqual([...documented].sort());
  });

  it("every request example validates against the document's schema", async () => {
    const doc = await readDocument();
    let checked = 0;
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const content = operation.requestBody?.content["application/json"];
        if (content === undefined) continue;
        const validator = new Validator({ ...content.schema, components: doc.components } as object, "2020-12", false);
        for (const [name, example] of Object.entries(content.examples)) {
          const result = validator.validate(example.value);
          expect(result.errors.slice(0, 3), `${method} ${path} example ${name}`).toEqual([]);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(6);
  });

  it("every request example is accepted by the zod schema its handler validates with", () => {
    for (const operation of OPERATIONS) {
      if (operation.body === undefined || operation.body.extend !== undefined) continue;
      for (const [name, example] of Object.entries(operation.body.examples)) {
        const parsed = operation.body.schema.safeParse(example.value);
        expect(parsed.error?.issues ?? [], `${operation.method} ${operation.path} example ${name}`).toEqual([]);
      }
    }
  });

  it("documents the status's conditional read: If-None-Match, the ETag on 200 and 304, and the 304", async () => {
    const get = (await readDocument()).paths["/v1/swarms/{id}"]?.get as unknown as {
      parameters: { name: string; in: string }[];
      responses: Record<string, { headers?: Record<string, unknown>; content?: unknown }>;
    };
    expect(get.parameters).toContainEqual(expect.objectContaining({ name: "If-None-Match", in: "header", required: false }));
    expect(Object.keys(get.responses["200"]?.headers ?? {})).toEqual(["ETag"]);
    expect(get.responses["304"]).toMatchObject({ headers: { ETag: expect.any(Object) } });
    expect(get.responses["304"]?.content).toBeUndefined();
  });

  it("a spec the zod schema refuses is refused by the document's schema too", async () => {
    const doc = await readDocument();
    const content = doc.paths["/v1/swarms"]?.post?.requestBody?.content["application/json"];
    if (content === undefined) throw new Error("POST /v1/swarms has no body");
    const validator = new Validator({ ...content.schema, components: doc.components } as object, "2020-12", false);
    expect(validator.validate({ name: "x", model: "mock-1", tasks: [{ prompt: "a" }], surprise: true }).valid).toBe(false);
    expect(validator.validate({ name: "x", model: "mock-1", tasks: [{ prompt: "a" }] }).valid).toBe(true);
  });
});
