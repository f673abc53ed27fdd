// Dollar figures for the scripts' reports (the canary's, the bench's platform cost).

/** Three significant digits, never in exponent notation (a queue's share of 1,000 tasks is below $0.000001); null: "—". */
export function formatUsd(n: number | null): string {
  return n === null ? "—" : `$${n.toLocaleString("en-US", { maximumSignificantDigits: 3 })}`;
}
