// Cron expressions for schedules: parsing, matching a minute, and finding the next run, in UTC.
// No I/O. Five fields (minute hour day-of-month month day-of-week), as Cloudflare cron triggers take.
//
// Supported: `*`, lists `1,2`, ranges `1-5`, steps `*/15`, `10-50/10` and `5/15` (= 5-max/15),
// month names JAN–DEC and weekday names SUN–SAT (case-insensitive, also inside ranges),
// day-of-week 0–7 (0 and 7 are Sunday), and the macros @hourly @daily @midnight @weekly
// @monthly @yearly @annually. Not supported (rejected with an error): `L`, `W`, `#`, `?`.
//
// Day matching follows Vixie cron: a field is "restricted" when its text does not start with `*`
// (so `*/2` counts as unrestricted, as in Vixie); when both day-of-month and day-of-week are
// restricted a day matches if EITHER matches, otherwise both must match.
import { err, ok, type Result } from "./result.ts";

export interface CronSchedule {
  /** The expression as given (trimmed). */
  expression: string;
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  daysOfMonth: ReadonlySet<number>;
  /** 1–12. */
  months: ReadonlySet<number>;
  /** 0–6, Sunday = 0 (a 7 in the expression is stored as 0). */
  daysOfWeek: ReadonlySet<number>;
  domRestricted: boolean;
  dowRestricted: boolean;
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  /** Offset of names[0] (JAN = 1, SUN = 0). */
  nameBase?: number;
}

const MONTH_NAMES = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"] as const;
const WEEKDAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] as const;

const FIELDS: readonly [FieldSpec, FieldSpec, FieldSpec, FieldSpec, FieldSpec] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day-of-month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: MONTH_NAMES, nameBase: 1 },
  { name: "day-of-week", min: 0, max: 7, names: WEEKDAY_NAMES, nameBase: 0 },
];

const MACROS: Readonly<Record<string, string>> = {
  "@hourly": "0 * * * *",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@weekly": "0 0 * * 0",
  "@monthly": "0 0 1 * *",
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
};

/** How far ahead `nextCronTime` looks before giving up (a bit over 5 years, so leap days are found). */
const SEARCH_HORIZON_MS = (5 * 366 + 1) * 24 * 60 * 60 * 1000;
const MINUTE_MS = 60_000;

export function parseCron(expression: string): Result<CronSchedule, string> {
  const trimmed = expression.trim();
  let body = trimmed;
  if (trimmed.startsWith("@")) {
    const expanded = MACROS[trimmed.toLowerCase()];
    if (expanded === undefined) return err(`unknown cron macro "${trimmed}"`);
    body = expanded;
  }
  const parts = body.split(/\s+/).filter((p) => p.length > 0);
  if (parts.length !== 5) {
    return err(`cron expression must have 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`);
  }
  const [minuteText, hourText, domText, monthText, dowText] = parts as [string, string, string, string, string];
  const [minuteSpec, hourSpec, domSpec, monthSpec, dowSpec] = FIELDS;

  const minutes = parseField(minuteText, minuteSpec);
  if (!minutes.ok) return minutes;
  const hours = parseField(hourText, hourSpec);
  if (!hours.ok) return hours;
  const daysOfMonth = parseField(domText, domSpec);
  if (!daysOfMonth.ok) return daysOfMonth;
  const months = parseField(monthText, monthSpec);
  if (!months.ok) return months;
  const dow = parseField(dowText, dowSpec);
  if (!dow.ok) return dow;
  const daysOfWeek = new Set<number>([...dow.value].map((d) => (d === 7 ? 0 : d)));

  return ok({
    expression: trimmed,
    minutes: minutes.value,
    hours: hours.value,
    daysOfMonth: daysOfMonth.value,
    months: months.value,
    daysOfWeek,
    domRestricted: !domText.startsWith("*"),
    dowRestricted: !dowText.startsWith("*"),
  });
}

function parseField(text: string, spec: FieldSpec): Result<Set<number>, string> {
  const values = new Set<number>();
  for (const part of text.split(",")) {
    const bad = (why: string): Result<never, string> => err(`${spec.name} field "${part}" ${why}`);
    if (part.length === 0) return err(`${spec.name} field "${text}" has an empty list item`);

    const slash = part.indexOf("/");
    const rangeText = slash === -1 ? part : part.slice(0, slash);
    let step = 1;
    if (slash !== -1) {
      const stepText = part.slice(slash + 1);
      if (!/^\d+$/.test(stepText)) return bad(`has an invalid step "${stepText}"`);
      step = Number(stepText);
      if (step < 1) return bad("has a step of 0");
    }

    let start: number;
    let end: number;
    if (rangeText === "*") {
      start = spec.min;
      end = spec.max;
    } else {
      const dash = rangeText.indexOf("-");
      const startText = dash === -1 ? rangeText : rangeText.slice(0, dash);
      const s = parseValue(startText, spec);
      if (s === null) return bad(`has an invalid value "${startText}"`);
      start = s;
      if (dash !== -1) {
        const endText = rangeText.slice(dash + 1);
        const e = parseValue(endText, spec);
        if (e === null) return bad(`has an invalid value "${endText}"`);
        end = e;
      } else {
        // `5/15` means 5-max/15; a plain `5` is just 5.
        end = slash === -1 ? start : spec.max;
      }
      if (start < spec.min || start > spec.max || end < spec.min || end > spec.max) {
        return bad(`is out of range ${spec.min}-${spec.max}`);
      }
      if (start > end) return bad("has a range whose start is after its end");
    }
    for (let v = start; v <= end; v += step) values.add(v);
  }
  return ok(values);
}

/** A number or (for month/day-of-week) a three-letter name; null when it is neither. */
function parseValue(text: string, spec: FieldSpec): number | null {
  if (/^\d+$/.test(text)) return Number(text);
  if (spec.names !== undefined && /^[a-z]{3}$/i.test(text)) {
    const index = spec.names.indexOf(text.toUpperCase());
    if (index !== -1) return index + (spec.nameBase ?? 0);
  }
  return null;
}

function dayMatches(schedule: CronSchedule, at: Date): boolean {
  const dom = schedule.daysOfMonth.has(at.getUTCDate());
  const dow = schedule.daysOfWeek.has(at.getUTCDay());
  return schedule.domRestricted && schedule.dowRestricted ? dom || dow : dom && dow;
}

/** Whether the schedule fires in the UTC minute containing `at`. */
export function cronMatches(schedule: CronSchedule, at: Date): boolean {
  if (Number.isNaN(at.getTime())) return false;
  return (
    schedule.minutes.has(at.getUTCMinutes()) && schedule.hours.has(at.getUTCHours()) && schedule.months.has(at.getUTCMonth() + 1) && dayMatches(schedule, at)
  );
}

/**
 * The start of the next minute strictly after `after` at which the schedule fires, or null when
 * there is none within about five years (e.g. `0 0 30 2 *`) or `after` is an invalid date.
 */
export function nextCronTime(schedule: CronSchedule, after: Date): Date | null {
  const from = after.getTime();
  if (!Number.isFinite(from)) return null;
  const limit = from + SEARCH_HORIZON_MS;
  let t = Math.floor(from / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  while (t <= limit) {
    const d = new Date(t);
    const year = d.getUTCFullYear();
    const month = d.getUTCMonth();
    const date = d.getUTCDate();
    const hour = d.getUTCHours();
    if (!schedule.months.has(month + 1)) {
      t = Date.UTC(year, month + 1, 1);
    } else if (!dayMatches(schedule, d)) {
      t = Date.UTC(year, month, date + 1);
    } else if (!schedule.hours.has(hour)) {
      t = Date.UTC(year, month, date, hour + 1);
    } else if (!schedule.minutes.has(d.getUTCMinutes())) {
      t += MINUTE_MS;
    } else {
      return d;
    }
  }
  return null;
}
