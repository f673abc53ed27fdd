import { describe, expect, it } from "vitest";
import { cronMatches, nextCronTime, parseCron, type CronSchedule } from "./cron.ts";

function mustParse(expression: string): CronSchedule {
  const r = parseCron(expression);
  if (!r.ok) throw new Error(`expected "${expression}" to parse: ${r.error}`);
  return r.value;
}

const sorted = (s: ReadonlySet<number>): number[] => [...s].sort((a, b) => a - b);
const utc = (iso: string): Date => new Date(iso);

describe("parseCron fields", () => {
  it.each([
    ["* * * * *", "minutes", Array.from({ length: 60 }, (_, i) => i)],
    ["*/15 * * * *", "minutes", [0, 15, 30, 45]],
    ["10-50/10 * * * *", "minutes", [10, 20, 30, 40, 50]],
    ["1,2,59 * * * *", "minutes", [1, 2, 59]],
    ["5/20 * * * *", "minutes", [5, 25, 45]],
    ["0 9-17 * * *", "hours", [9, 10, 11, 12, 13, 14, 15, 16, 17]],
    ["0 0 1,15 * *", "daysOfMonth", [1, 15]],
    ["0 0 * JAN,jul,Dec *", "months", [1, 7, 12]],
    ["0 0 * mar-may *", "months", [3, 4, 5]],
    ["0 0 * * MON-FRI", "daysOfWeek", [1, 2, 3, 4, 5]],
    ["0 0 * * sun,Sat", "daysOfWeek", [0, 6]],
    ["0 0 * * 7", "daysOfWeek", [0]],
    ["0 0 * * 5-7", "daysOfWeek", [0, 5, 6]],
    ["0 0 * * *", "daysOfWeek", [0, 1, 2, 3, 4, 5, 6]],
  ] as const)("%s → %s", (expression, field, expected) => {
    expect(sorted(mustParse(expression)[field])).toEqual(expected);
  });

  it.each([
    ["@hourly", "0 * * * *"],
    ["@daily", "0 0 * * *"],
    ["@midnight", "0 0 * * *"],
    ["@weekly", "0 0 * * 0"],
    ["@monthly", "0 0 1 * *"],
    ["@yearly", "0 0 1 1 *"],
    ["@ANNUALLY", "0 0 1 1 *"],
  ])("macro %s equals %s", (macro, equivalent) => {
    const a = mustParse(macro);
    const b = mustParse(equivalent);
    expect({ ...a, expression: "" }).toEqual({ ...b, expression: "" });
    expect(a.expression).toBe(macro);
  });

  it.each([
    ["* * * * *", false, false],
    ["0 0 1 * *", true, false],
    ["0 0 * * 1", false, true],
    ["0 0 1 * 1", true, true],
    ["0 0 */2 * 1", false, true],
  ])("%s restricts dom=%s dow=%s", (expression, dom, dow) => {
    const s = mustParse(expression);
    expect([s.domRestricted, s.dowRestricted]).toEqual([dom, dow]);
  });
});

describe("parseCron errors", () => {
  it.each([
    ["61 * * * *", 'minute field "61" is out of range 0-59'],
    ["0 24 * * *", 'hour field "24" is out of range 0-23'],
    ["0 0 0 * *", 'day-of-month field "0" is out of range 1-31'],
    ["0 0 32 * *", 'day-of-month field "32" is out of range 1-31'],
    ["0 0 * 13 *", 'month field "13" is out of range 1-12'],
    ["0 0 * * 8", 'day-of-week field "8" is out of range 0-7'],
    ["0 0 * FOO *", 'month field "FOO" has an invalid value "FOO"'],
    ["0 0 * * MON-FOO", 'day-of-week field "MON-FOO" has an invalid value "FOO"'],
    ["0 0 MON * *", 'day-of-month field "MON" has an invalid value "MON"'],
    ["*/0 * * * *", 'minute field "*/0" has a step of 0'],
    ["*/x * * * *", 'minute field "*/x" has an invalid step "x"'],
    ["30-10 * * * *", 'minute field "30-10" has a range whose start is after its end'],
    ["1,,2 * * * *", 'minute field "1,,2" has an empty list item'],
    ["0 0 L * *", 'day-of-month field "L" has an invalid value "L"'],
    ["* * * *", "cron expression must have 5 fields (minute hour day-of-month month day-of-week), got 4"],
    ["* * * * * *", "cron expression must have 5 fields (minute hour day-of-month month day-of-week), got 6"],
    ["", "cron expression must have 5 fields (minute hour day-of-month month day-of-week), got 0"],
    ["@often", 'unknown cron macro "@often"'],
  ])("%j → %s", (expression, message) => {
    expect(parseCron(expression)).toEqual({ ok: false, error: message });
  });
});

describe("cronMatches", () => {
  it.each([
    ["*/15 * * * *", "2025-03-04T10:45:59.999Z", true],
    ["*/15 * * * *", "2025-03-04T10:46:00Z", false],
    ["30 9 * * *", "2025-03-04T09:30:00Z", true],
    // UTC, not local time
    ["30 9 * * *", "2025-03-04T09:30:00+02:00", false],
    ["0 0 * * MON-FRI", "2025-03-08T00:00:00Z", false], // Saturday
    ["0 0 * * MON-FRI", "2025-03-07T00:00:00Z", true], // Friday
    ["0 0 * * 7", "2025-03-09T00:00:00Z", true], // Sunday
    // Vixie: both day fields restricted → either matches
    ["0 0 13 * FRI", "2025-03-13T00:00:00Z", true], // Thursday the 13th
    ["0 0 13 * FRI", "2025-03-14T00:00:00Z", true], // Friday the 14th
    ["0 0 13 * FRI", "2025-03-15T00:00:00Z", false],
    // only dow restricted → dom `*/2` still has to match (Vixie: starts with `*`)
    ["0 0 */2 * FRI", "2025-03-14T00:00:00Z", false],
    ["0 0 */2 * FRI", "2025-03-21T00:00:00Z", true],
    ["0 0 1 JAN *", "2026-01-01T00:00:00Z", true],
    ["0 0 1 JAN *", "2026-02-01T00:00:00Z", false],
  ])("%s at %s → %s", (expression, at, expected) => {
    expect(cronMatches(mustParse(expression), utc(at))).toBe(expected);
  });

  it("is false for an invalid date", () => {
    expect(cronMatches(mustParse("* * * * *"), new Date(Number.NaN))).toBe(false);
  });
});

describe("nextCronTime", () => {
  it.each([
    ["* * * * *", "2025-03-04T10:45:00Z", "2025-03-04T10:46:00.000Z"],
    ["* * * * *", "2025-03-04T10:45:30.500Z", "2025-03-04T10:46:00.000Z"],
    ["*/15 * * * *", "2025-03-04T10:45:00Z", "2025-03-04T11:00:00.000Z"],
    ["*/15 * * * *", "2025-03-04T10:44:59Z", "2025-03-04T10:45:00.000Z"],
    ["0 9 * * *", "2025-03-04T09:00:00Z", "2025-03-05T09:00:00.000Z"],
    ["0 0 1 * *", "2025-12-15T00:00:00Z", "2026-01-01T00:00:00.000Z"],
    ["0 0 31 * *", "2025-04-01T00:00:00Z", "2025-05-31T00:00:00.000Z"],
    ["0 0 29 2 *", "2025-01-01T00:00:00Z", "2028-02-29T00:00:00.000Z"],
    ["0 0 * * MON", "2025-03-05T12:00:00Z", "2025-03-10T00:00:00.000Z"],
    ["0 0 13 * FRI", "2025-03-10T00:00:00Z", "2025-03-13T00:00:00.000Z"],
    ["@weekly", "2025-03-09T00:00:00Z", "2025-03-16T00:00:00.000Z"],
    ["@yearly", "2025-06-01T00:00:00Z", "2026-01-01T00:00:00.000Z"],
    ["59 23 31 12 *", "2025-12-31T23:58:00Z", "2025-12-31T23:59:00.000Z"],
  ])("%s after %s → %s", (expression, after, expected) => {
    const next = nextCronTime(mustParse(expression), utc(after));
    expect(next?.toISOString()).toBe(expected);
  });

  it.each([["0 0 30 2 *"], ["0 0 31 4,6,9,11 *"]])("%s never fires → null", (expression) => {
    expect(nextCronTime(mustParse(expression), utc("2025-01-01T00:00:00Z"))).toBeNull();
  });

  it("returns null for an invalid date", () => {
    expect(nextCronTime(mustParse("* * * * *"), new Date(Number.NaN))).toBeNull();
  });

  it.each([["*/7 3-5 * * *"], ["0 0 13 * FRI"], ["15 10 1,15 JAN-MAR,OCT *"], ["0 */6 * * SAT,SUN"]])(
    "%s agrees with a minute-by-minute scan",
    (expression) => {
      const schedule = mustParse(expression);
      const bruteNext = (after: Date): Date => {
        let t = Math.floor(after.getTime() / 60_000) * 60_000 + 60_000;
        while (!cronMatches(schedule, new Date(t))) t += 60_000;
        return new Date(t);
      };
      let t = utc("2025-01-01T00:00:30Z");
      for (let i = 0; i < 25; i += 1) {
        const next = nextCronTime(schedule, t);
        expect(next?.toISOString()).toBe(bruteNext(t).toISOString());
        if (next === null) return;
        t = next;
      }
    },
  );
});
