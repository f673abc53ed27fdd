import { describe, expect, it } from "vitest";
import { isPortClash } from "./local-stack.ts";

describe("which failed starts of the local stack are made again on new ports", () => {
  it.each([
    [
      "workerd could not bind a port picked free (wrangler's own words)",
      new Error(
        'wrangler dev exited with code 1:\n✘ [ERROR] Address already in use (socket "direct:1:default"). Please check that you are not already running a server on this address',
      ),
      true,
    ],
    ["a session that exited for another reason", new Error('wrangler dev exited with code 1:\n✘ [ERROR] Could not resolve "./missing.ts"'), false],
    ["a stack that did not answer in time", new Error("wrangler dev did not answer http://127.0.0.1:1234/healthz within 90 s"), false],
    ["not an Error", "Address already in use", false],
  ])("%s: %s", (_label, error, expected) => {
    expect(isPortClash(error)).toBe(expected);
  });
});
