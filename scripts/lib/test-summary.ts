// `npm test`'s closing line `N passed, N failed` from vitest's JSON report. No I/O. A file that failed
// outside its tests (failed to load, a hook or an unhandled error threw) counts as failed, and a run that
// failed never reads "0 failed".
import path from "node:path";
import { stripVTControlCharacters } from "node:util";
import { z } from "zod";

const AssertionResultSchema = z.looseObject({ status: z.string() });
const FileResultSchema = z.looseObject({
  name: z.string(),
  status: z.string(),
  message: z.string().optional(),
  assertionResults: z.array(AssertionResultSchema),
});
/** What we read of `vitest --reporter=json` (the Jest-compatible shape). */
export const VitestReportSchema = z.looseObject({ testResults: z.array(FileResultSchema) });
export type VitestReport = z.infer<typeof VitestReportSchema>;

export interface VitestRun {
  /** The parsed report, or null when vitest wrote none (it died before the run ended). */
  report: VitestReport | null;
  exitCode: number | null;
  signal: string | null;
  /** Report paths are absolute; notes name files relative to this. */
  root: string;
}

export interface TestSummary {
  passed: number;
  failed: number;
  skipped: number;
  /** Why the counts alone do not tell the story, one short clause each. */
  notes: string[];
}

const SKIPPED_STATUSES = new Set(["skipped", "pending", "todo", "disabled"]);
const MESSAGE_MAX_CHARS = 160;

export function summarizeVitestRun(run: VitestRun): TestSummary {
  const summary: TestSummary = { passed: 0, failed: 0, skipped: 0, notes: [] };
  for (const file of run.report?.testResults ?? []) {
    let failedTests = 0;
    for (const { status } of file.assertionResults) {
      if (status === "passed") summary.passed++;
      else if (status === "failed") failedTests++;
      else if (SKIPPED_STATUSES.has(status)) summary.skipped++;
    }
    summary.failed += failedTests;
    if (file.status === "failed" && failedTests === 0) {
      summary.failed++;
      const reason = toOneLine(file.message ?? "");
      summary.notes.push(`${path.relative(run.root, file.name) || file.name} failed outside its tests${reason ? `: ${reason}` : ""}`);
    }
  }
  const exit = run.signal ? `was killed by ${run.signal}` : `exited ${run.exitCode ?? "without a code"}`;
  if (!run.report) {
    summary.failed = Math.max(summary.failed, 1);
    summary.notes.push(`vitest ${exit} without a report: see its output above`);
  } else if (run.exitCode !== 0 && summary.failed === 0) {
    summary.failed = 1;
    const guess = run.signal ? "" : " (an unhandled error?)";
    summary.notes.push(`vitest ${exit} with no failed test${guess}: see its output above`);
  }
  return summary;
}

export function toSummaryLine(summary: TestSummary): string {
  let line = `${summary.passed} passed, ${summary.failed} failed`;
  if (summary.skipped > 0) line += `, ${summary.skipped} skipped`;
  if (summary.notes.length > 0) line += ` (${summary.notes.join("; ")})`;
  return line;
}

function toOneLine(message: string): string {
  const first = stripVTControlCharacters(message).trim().split("\n", 1)[0]?.trim() ?? "";
  return first.length > MESSAGE_MAX_CHARS ? `${first.slice(0, MESSAGE_MAX_CHARS - 1)}…` : first;
}
