// `edgeswarm results --format …`: a swarm's results as JSON, JSON lines, a Markdown table or CSV.
import type { TaskResult } from "../src/client/index.ts";

export const RESULT_FORMATS = ["json", "jsonl", "md", "csv"] as const;
export type ResultFormat = (typeof RESULT_FORMATS)[number];

const COLUMNS = ["task_id", "state", "attempts", "cost_usd", "latency_ms", "error", "output"] as const;

function cell(result: TaskResult, column: (typeof COLUMNS)[number]): string {
  switch (column) {
    case "error":
      return result.error === null ? "" : `${result.error.class}: ${result.error.message}`;
    case "output":
      return result.output ?? "";
    case "latency_ms":
      return result.latency_ms === null ? "" : String(result.latency_ms);
    default:
      return String(result[column]);
  }
}

/** RFC 4180: quote a field holding a comma, quote or line break; double the quotes inside. */
const toCsvField = (text: string): string => (/[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);
const toMdCell = (text: string): string => text.replaceAll("|", "\\|").replace(/\r?\n/g, "<br>");

/** Lines to print, streaming: a header first where the format has one, then one line per result (json: one array). */
export function formatResultsHeader(format: ResultFormat): string[] {
  if (format === "csv") return [COLUMNS.join(",")];
  if (format === "md") return [`| ${COLUMNS.join(" | ")} |`, `| ${COLUMNS.map(() => "---").join(" | ")} |`];
  return [];
}

export function formatResultLine(format: Exclude<ResultFormat, "json">, result: TaskResult): string {
  if (format === "jsonl") return JSON.stringify(result);
  if (format === "csv") return COLUMNS.map((c) => toCsvField(cell(result, c))).join(",");
  return `| ${COLUMNS.map((c) => toMdCell(cell(result, c))).join(" | ")} |`;
}
