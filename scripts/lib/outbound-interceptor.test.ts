import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  DIRECT_OUTBOUND,
  INTERCEPTED_OUTBOUND,
  KEEP_INTERCEPTOR_ENV,
  keepsInterceptor,
  MINIFLARE_BUNDLE,
  withoutOutboundInterceptor,
} from "./outbound-interceptor.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const installed = (): string => readFileSync(path.join(ROOT, "node_modules", MINIFLARE_BUNDLE), "utf8");

describe("the local stack without miniflare's outbound interceptor", () => {
  it("rewrites the one place the installed miniflare gives a user Worker its interceptor, and nothing else", () => {
    const source = installed();
    const rewritten = withoutOutboundInterceptor(source);
    expect(rewritten).not.toContain(INTERCEPTED_OUTBOUND);
    expect(rewritten.split(DIRECT_OUTBOUND)).toHaveLength(2);
    expect(rewritten.length - source.length).toBe(DIRECT_OUTBOUND.length - INTERCEPTED_OUTBOUND.length);
    // The service it sends the Worker's fetches to is the one the interceptor itself fetches
    // through: miniflare defines it, with public and private addresses allowed.
    expect(source).toMatch(/name: "internet",\s+network: \{[^}]*allow: \["public", "private"/);
  });

  it.each([
    ["a miniflare that no longer names it", "globalOutbound: { name: 'outbound' },", 0],
    ["a miniflare that names it twice", `${INTERCEPTED_OUTBOUND}\n${INTERCEPTED_OUTBOUND}`, 2],
  ])("refuses %s, saying how to run the stack anyway", (_, source, count) => {
    expect(() => withoutOutboundInterceptor(source)).toThrow(`named ${count} times`);
    expect(() => withoutOutboundInterceptor(source)).toThrow(`${KEEP_INTERCEPTOR_ENV}=true`);
  });

  it.each([
    [{}, false],
    [{ [KEEP_INTERCEPTOR_ENV]: "true" }, true],
    [{ [KEEP_INTERCEPTOR_ENV]: "false" }, false],
    [{ [KEEP_INTERCEPTOR_ENV]: "1" }, false],
  ])("keeps it only when the environment says true: %j", (env, expected) => {
    expect(keepsInterceptor(env)).toBe(expected);
  });

  it("is applied by the hook as wrangler's process loads miniflare, and only with it", () => {
    // As the stack runs it: `--import` before wrangler's CLI, which require()s miniflare. The
    // interceptor is named in its core plugin's services.
    const probe = `const text = require("miniflare").CORE_PLUGIN.getServices.toString(); process.stdout.write(JSON.stringify({ direct: text.includes(${JSON.stringify(DIRECT_OUTBOUND)}), intercepted: text.includes(${JSON.stringify(INTERCEPTED_OUTBOUND)}) }))`;
    const load = (hook: string[]) => {
      const run = spawnSync(process.execPath, [...hook, "-e", probe], { cwd: ROOT, encoding: "utf8" });
      expect(run.stderr).toBe("");
      return JSON.parse(run.stdout) as unknown;
    };
    expect(load(["--import", path.join(import.meta.dirname, "outbound-interceptor-hook.ts")])).toEqual({ direct: true, intercepted: false });
    expect(load([])).toEqual({ direct: false, intercepted: true });
  });
});
