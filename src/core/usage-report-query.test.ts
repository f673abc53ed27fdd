import { describe, expect, it } from "vitest";
import { DAY_MS, parseUsageReportQuery, parseUtcInstant } from "./usage-report-query.ts";

describe("parseUtcInstant", () => {
  it.each<[string, string | null]>([
    ["2026-05-01", "2026-05-01T00:00:00.000Z"],
    ["2026-05-01T12:30", "2026-05-01T12:30:00.000Z"],
    ["2026-05-01T12:30:15", "2026-05-01T12:30:15.000Z"],
    ["2026-05-01T12:30:15Z", "2026-05-01T12:30:15.000Z"],
    ["2026-05-01T12:30:15.5Z", "2026-05-01T12:30:15.500Z"],
    ["2026-05-01T12:30:15.123Z", "2026-05-01T12:30:15.123Z"],
    ["2026-05-01T12:30:00+02:00", "2026-05-01T10:30:00.000Z"],
    ["2026-05-01T00:30:00-01:30", "2026-05-01T02:00:00.000Z"],
    ["2024-02-29", "2024-02-29T00:00:00.000Z"],
    ["0050-01-01", "0050-01-01T00:00:00.000Z"], // not 1950: Date.UTC's two-digit-year rule is avoided
    ["2026-02-29", null], // not a leap year: no roll-over to March 1
    ["2026-13-01", null],
    ["2026-04-31", null],
    ["2026-05-01T24:00", null],
    ["2026-05-01T12:60", null],
    ["2026-05-01T12:30:60Z", null],
    ["2026-05-01T12:30:00.1234Z", null],
    ["2026-05-01T12:30:00+24:00", null],
    ["2026-05-01T12Z", null],
    ["2026-5-1", null],
    ["2026-05-01t12:30z", null],
    ["2026-05-01 12:30", null],
    ["1714521600000", null],
    ["yesterday", null],
    ["", null],
  ])("%j → %s", (text, expected) => {
    const at = parseUtcInstant(text);
    expect(at === null ? null : new Date(at).toISOString()).toBe(expected);
  });
});

describe("parseUsageReportQuery", () => {
  const now = Date.parse("2026-06-15T10:00:00.000Z");
  const iso = (ms: number) => new Date(ms).toISOString();

  it("defaults to the last 30 days up to now, grouped by model", () => {
    const parsed = parseUsageReportQuery({}, now);
    expect(parsed).toEqual({ ok: true, value: { from: now - 30 * DAY_MS, to: now, groupBy: "model" } });
  });

  it.each<[Record<string, string>, { from: string; to: string; groupBy: string }]>([
    [
      { from: "2026-06-01", to: "2026-06-02", group_by: "day" },
      { from: "2026-06-01T00:00:00.000Z", to: "2026-06-02T00:00:00.000Z", groupBy: "day" },
    ],
    [{ from: "2026-06-01" }, { from: "2026-06-01T00:00:00.000Z", to: "2026-06-15T10:00:00.000Z", groupBy: "model" }],
    [{ to: "2026-06-10" }, { from: "2026-05-11T00:00:00.000Z", to: "2026-06-10T00:00:00.000Z", groupBy: "model" }],
    [{ group_by: "swarm" }, { from: "2026-05-16T10:00:00.000Z", to: "2026-06-15T10:00:00.000Z", groupBy: "swarm" }],
    [{ group_by: "token" }, { from: "2026-05-16T10:00:00.000Z", to: "2026-06-15T10:00:00.000Z", groupBy: "token" }],
    // Exactly 366 days is allowed.
    [
      { from: "2024-01-01", to: "2025-01-01" },
      { from: "2024-01-01T00:00:00.000Z", to: "2025-01-01T00:00:00.000Z", groupBy: "model" },
    ],
  ])("%j → %j", (query, expected) => {
    const parsed = parseUsageReportQuery(query, now);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
    expect({ from: iso(parsed.value.from), to: iso(parsed.value.to), groupBy: parsed.value.groupBy }).toEqual(expected);
  });

  it.each<[string, Record<string, string>, string[], RegExp]>([
    ["a malformed from", { from: "2026/06/01" }, ["from"], /YYYY-MM-DD/],
    ["an impossible to", { to: "2026-02-30" }, ["to"], /YYYY-MM-DD/],
    ["an unknown group_by", { group_by: "week" }, ["group_by"], /model, day, swarm, token/],
    ["an unknown parameter", { groupby: "day" }, ["groupby"], /unknown parameter/],
    ["from equal to to", { from: "2026-06-01", to: "2026-06-01" }, ["from"], /before to/],
    ["from after to", { from: "2026-06-02", to: "2026-06-01" }, ["from"], /before to/],
    ["from in the future with the default to", { from: "2026-07-01" }, ["from"], /before to/],
    ["367 days", { from: "2024-01-01", to: "2025-01-02" }, ["from"], /367 days; at most 366/],
    ["a year-old from with the default to", { from: "2025-01-01" }, ["from"], /at most 366/],
    ["two bad params at once", { from: "x", group_by: "y" }, ["from", "group_by"], /./],
  ])("refuses %s naming %j", (_case, query, paths, message) => {
    const parsed = parseUsageReportQuery(query, now);
    if (parsed.ok) throw new Error("expected a refusal");
    expect(parsed.error.map((d) => d.path)).toEqual(paths);
    expect(parsed.error[0]?.message).toMatch(message);
  });
});
