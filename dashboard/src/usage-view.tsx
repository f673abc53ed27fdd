// Usage over time by model, from GET /v1/usage: cost per day for the last 7 days stacked by model
// (one report grouped by model per day), and the last 30 days' totals per model.
import { useEffect, useState } from "preact/hooks";
import type { EdgeswarmClient } from "../../src/client/index.ts";
import { StackedBars } from "./charts.tsx";

type Row = { key: string; calls: number; total_tokens: number | null; cost_usd: number | null; p50_latency_ms: number | null; error_rate: number | null };

const DAY = 86_400_000;
const toDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export function UsageView(props: { client: EdgeswarmClient }) {
  const [days, setDays] = useState<{ day: string; byModel: Record<string, number> }[] | null>(null);
  const [totals, setTotals] = useState<Row[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const today = Date.parse(`${toDay(Date.now())}T00:00:00Z`);
    const starts = Array.from({ length: 7 }, (_, i) => today - (6 - i) * DAY);
    Promise.all([
      ...starts.map((start) => props.client.usage({ from: toDay(start), to: toDay(start + DAY), group_by: "model" })),
      props.client.usage({ group_by: "model" }),
    ])
      .then((reports) => {
        const month = reports.pop();
        setDays(
          reports.map((r, i) => ({
            day: toDay(starts[i] ?? 0),
            byModel: Object.fromEntries(((r.rows ?? []) as Row[]).map((row) => [row.key, row.cost_usd ?? 0])),
          })),
        );
        setTotals(((month?.rows ?? []) as Row[]).sort((a, b) => (b.cost_usd ?? 0) - (a.cost_usd ?? 0)));
      })
      .catch((e: Error) => setError(e.message));
  }, []);
  const models = [...new Set((days ?? []).flatMap((d) => Object.keys(d.byModel)))].sort();
  return (
    <section aria-labelledby="usage-h">
      <h2 id="usage-h">Usage</h2>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {days === null ? (
        !error && <p class="muted">Loading…</p>
      ) : (
        <>
          <h3>Cost per day by model (last 7 days, UTC)</h3>
          <StackedBars days={days} models={models} />
          <h3>Last 30 days by model</h3>
          <table>
            <thead>
              <tr>
                <th>model</th>
                <th>calls</th>
                <th>tokens</th>
                <th>cost</th>
                <th>p50</th>
                <th>errors</th>
              </tr>
            </thead>
            <tbody>
              {totals.map((r) => (
                <tr>
                  <td>{r.key}</td>
                  <td>{r.calls}</td>
                  <td>{r.total_tokens ?? "—"}</td>
                  <td>{r.cost_usd === null ? "—" : `$${r.cost_usd.toFixed(4)}`}</td>
                  <td>{r.p50_latency_ms === null ? "—" : `${Math.round(r.p50_latency_ms)} ms`}</td>
                  <td>{r.error_rate === null ? "—" : `${(r.error_rate * 100).toFixed(1)}%`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
