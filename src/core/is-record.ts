// A JSON value that is an object with fields (not null, not an array). No I/O.

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
