import { describe, expect, it } from "vitest";
import { summarizeVitestRun, toSummaryLine, type VitestReport, VitestReportSchema } from "./test-summary.ts";

const root = "/repo";
type FileResult = VitestReport["testResults"][number];
const file = (name: string, status: string, tests: string[], message = ""): FileResult => ({
  name: `${root}/${name}`,
  status,
  message,
  assertionResults: tests.map((s) => ({ status: s })),
});
const report = (...testResults: FileResult[]): VitestReport => ({ testResults });

describe("npm test's closing line", () => {
  it.each([
    ["every test passed", report(file("a.test.ts", "passed", ["passed", "passed"])), 0, null, "2 passed, 0 failed"],
    [
      "failed tests are counted one by one",
      report(file("a.test.ts", "failed", ["passed", "failed", "failed"]), file("b.test.ts", "passed", ["passed"])),
      1,
      null,
      "2 passed, 2 failed",
    ],
    [
      "skipped, pending and todo tests are skipped",
      report(file("a.test.ts", "passed", ["passed", "skipped", "pending", "todo"])),
      0,
      null,
      "1 passed, 0 failed, 3 skipped",
    ],
    [
      "a file whose beforeAll threw: its skipped tests do not hide it",
      report(
        file("test/browser/dashboard.test.ts", "failed", ["skipped", "skipped"], "Executable doesn't exist at /usr/bin/chromium"),
        file("a.test.ts", "passed", ["passed"]),
      ),
      1,
      null,
      "1 passed, 1 failed, 2 skipped (test/browser/dashboard.test.ts failed outside its tests: Executable doesn't exist at /usr/bin/chromium)",
    ],
    [
      "a file that failed to load has no tests at all",
      report(file("src/x.test.ts", "failed", [], "Failed to load url ./missing.ts\n    at somewhere"), file("a.test.ts", "passed", ["passed"])),
      1,
      null,
      "1 passed, 1 failed (src/x.test.ts failed outside its tests: Failed to load url ./missing.ts)",
    ],
    ["a failed file with no message", report(file("x.test.ts", "failed", [])), 1, null, "0 passed, 1 failed (x.test.ts failed outside its tests)"],
    [
      "a failed file with failed tests is not counted twice",
      report(file("x.test.ts", "failed", ["failed", "passed"], "afterAll threw")),
      1,
      null,
      "1 passed, 1 failed",
    ],
    [
      "vitest failed though every test passed (an unhandled error)",
      report(file("a.test.ts", "passed", ["passed"])),
      1,
      null,
      "1 passed, 1 failed (vitest exited 1 with no failed test (an unhandled error?): see its output above)",
    ],
    ["no report", null, 1, null, "0 passed, 1 failed (vitest exited 1 without a report: see its output above)"],
    ["killed before writing its report", null, null, "SIGKILL", "0 passed, 1 failed (vitest was killed by SIGKILL without a report: see its output above)"],
    [
      "killed after writing its report",
      report(file("a.test.ts", "passed", ["passed"])),
      null,
      "SIGTERM",
      "1 passed, 1 failed (vitest was killed by SIGTERM with no failed test: see its output above)",
    ],
  ])("%s", (_, parsed, exitCode, signal, line) => {
    expect(toSummaryLine(summarizeVitestRun({ report: parsed, exitCode, signal, root }))).toBe(line);
  });

  it("keeps a file's message to one short line without colours", () => {
    const summary = summarizeVitestRun({
      report: report(file("x.test.ts", "failed", [], `\u001b[31m${"e".repeat(500)}\u001b[39m\nmore`)),
      exitCode: 1,
      signal: null,
      root,
    });
    expect(summary.notes).toEqual([`x.test.ts failed outside its tests: ${"e".repeat(159)}…`]);
  });

  it("ends with extra notes the caller adds", () => {
    expect(toSummaryLine({ passed: 3, failed: 0, skipped: 0, notes: ["browser suite not run: EDGESWARM_SKIP_BROWSER=1"] })).toBe(
      "3 passed, 0 failed (browser suite not run: EDGESWARM_SKIP_BROWSER=1)",
    );
  });

  it("reads vitest's report shape and keeps fields it does not know", () => {
    const parsed = VitestReportSchema.parse({
      numPassedTests: 1,
      testResults: [{ name: "/repo/a.test.ts", status: "passed", message: "", startTime: 1, assertionResults: [{ status: "passed", title: "t" }] }],
    });
    expect(summarizeVitestRun({ report: parsed, exitCode: 0, signal: null, root })).toEqual({ passed: 1, failed: 0, skipped: 0, notes: [] });
  });
});
