// Reads an integer command-line option within bounds, or exits 2 saying which option and why.

export function readIntOption(name: string, raw: string | undefined, min: number, max: number): number {
  const n = Number(raw);
  if (raw === undefined || raw.trim() === "" || !Number.isInteger(n) || n < min || n > max) {
    console.error(`--${name} must be an integer ${min}-${max}, got "${raw ?? ""}"`);
    process.exit(2);
  }
  return n;
}
