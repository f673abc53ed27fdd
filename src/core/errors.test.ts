import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ApiError, toErrorBody, toHttpStatus, toIssueDetails, toIssuePath, type ApiErrorCode } from "./errors.ts";

describe("toHttpStatus", () => {
  it.each<[ApiErrorCode, number]>([
    ["invalid_spec", 400],
    ["invalid_request", 400],
    ["unauthorized", 401],
    ["budget_exceeded", 402],
    ["forbidden", 403],
    ["not_found", 404],
    ["conflict", 409],
    ["payload_too_large", 413],
    ["unsupported_media_type", 415],
    ["rate_limited", 429],
    ["internal", 500],
  ])("%s → %i", (code, status) => {
    expect(toHttpStatus(code)).toBe(status);
  });
});

describe("toIssuePath", () => {
  it.each<[PropertyKey[], string]>([
    [[], "(root)"],
    [["name"], "name"],
    [["tasks", 3, "prompt"], "tasks.3.prompt"],
    [["limits", "concurrency"], "limits.concurrency"],
  ])("%j → %s", (path, expected) => {
    expect(toIssuePath(path)).toBe(expected);
  });
});

describe("toIssueDetails", () => {
  const schema = z.strictObject({
    name: z.string().min(1, "name must not be empty"),
    items: z.array(z.strictObject({ n: z.number() })),
  });
  it.each<[string, unknown, { path: string; message: string }[]]>([
    ["nested field", { name: "a", items: [{ n: 1 }, { n: "2" }] }, [{ path: "items.1.n", message: expect.any(String) as string }]],
    ["custom message", { name: "", items: [] }, [{ path: "name", message: "name must not be empty" }]],
    ["unknown key at the root", { name: "a", items: [], extra: 1 }, [{ path: "(root)", message: expect.stringContaining("extra") as string }]],
    [
      "several issues in order",
      { name: "", items: [{}] },
      [
        { path: "name", message: "name must not be empty" },
        { path: "items.0.n", message: expect.any(String) as string },
      ],
    ],
  ])("%s", (_name, input, details) => {
    const r = schema.safeParse(input);
    expect(r.success ? [] : toIssueDetails(r.error)).toEqual(details);
  });
});

describe("toErrorBody / ApiError", () => {
  it.each([
    [undefined, { error: { code: "not_found", message: "no such swarm", details: [] } }],
    ["req_1", { error: { code: "not_found", message: "no such swarm", details: [], request_id: "req_1" } }],
  ])("request id %s", (requestId, body) => {
    expect(toErrorBody("not_found", "no such swarm", [], requestId)).toEqual(body);
  });

  it("carries code and details", () => {
    const e = new ApiError("invalid_spec", "bad spec", [{ path: "tasks", message: "empty" }]);
    expect([e.name, e.code, e.message, e.details, e instanceof Error]).toEqual([
      "ApiError",
      "invalid_spec",
      "bad spec",
      [{ path: "tasks", message: "empty" }],
      true,
    ]);
  });
});
