import { describe, expect, it } from "vitest";
import { MAX_SECRET_CHARS, SecretNameSchema, SecretPutSchema } from "./tenant-secrets.ts";

describe("tenant secrets", () => {
  it.each([
    ["code_search", true],
    ["A-1", true],
    ["x".repeat(64), true],
    ["x".repeat(65), false],
    ["has.dot", false],
    ["", false],
  ])("name %j valid: %s", (name, valid) => {
    expect(SecretNameSchema.safeParse(name).success).toBe(valid);
  });

  it.each([
    [{ value: "tok_abc" }, true],
    [{ value: "x".repeat(MAX_SECRET_CHARS) }, true],
    [{ value: "x".repeat(MAX_SECRET_CHARS + 1) }, false],
    [{ value: "" }, false],
    [{ value: "has space" }, false],
    [{ value: "line\nbreak" }, false],
    [{ value: "é" }, false],
    [{ value: "v", extra: 1 }, false],
  ])("body %j valid: %s", (body, valid) => {
    expect(SecretPutSchema.safeParse(body).success).toBe(valid);
  });
});
