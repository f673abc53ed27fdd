import { describe, expect, it } from "vitest";
import { reportLimits } from "./deploy-limits.ts";

const MIB = 1024 * 1024;

describe("reportLimits", () => {
  it.each([
    { name: "a small Worker", raw: 1.1 * MIB, cpu: 95, size: "ok", startup: "ok" },
    { name: "a Worker near the size limit", raw: 50 * MIB, cpu: 95, size: "near", startup: "ok" },
    { name: "a Worker over the size limit", raw: 65 * MIB, cpu: 95, size: "over", startup: "ok" },
    { name: "a slow start", raw: 1 * MIB, cpu: 1_200, size: "ok", startup: "over" },
  ])("$name", ({ raw, cpu, size, startup }) => {
    const report = reportLimits({ worker: "orch", rawBytes: raw, gzipBytes: raw / 5, startupCpuMs: cpu, startupTop: [{ name: "init:1", ms: 12 }] });
    expect(report).toMatchObject({ size, startup });
    expect(report.lines[0]).toBe("orch");
    expect(report.lines.join("\n")).toMatch(/of the 64 MiB limit/);
    expect(report.lines.join("\n")).toMatch(/of the 1 s limit/);
  });
});
