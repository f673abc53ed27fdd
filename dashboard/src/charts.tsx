// Small SVG charts drawn from numbers the page already has: the latency histogram with p50/p95,
// the adaptive window over time, and cost per day stacked by model. No chart library: each is a
// few rects and a polyline.

export function LatencyHistogram(props: { latencies: number[]; p50: number | null; p95: number | null }) {
  const { latencies } = props;
  if (latencies.length === 0) return <p class="muted">No finished calls yet.</p>;
  const max = Math.max(...latencies);
  const bins = 30;
  const width = 360;
  const height = 120;
  const counts = new Array<number>(bins).fill(0);
  for (const l of latencies) {
    const bin = Math.min(bins - 1, Math.floor((l / (max || 1)) * bins));
    counts[bin] = (counts[bin] ?? 0) + 1;
  }
  const top = Math.max(...counts);
  const x = (ms: number) => (ms / (max || 1)) * width;
  return (
    <svg width={width} height={height + 16} role="img" aria-label={`latency histogram: p50 ${props.p50 ?? "n/a"} ms, p95 ${props.p95 ?? "n/a"} ms`}>
      {counts.map((c, i) => (
        <rect x={(i * width) / bins} y={height - (c / top) * height} width={width / bins - 1} height={(c / top) * height} fill="var(--running)" />
      ))}
      {props.p50 !== null && <line x1={x(props.p50)} x2={x(props.p50)} y1={0} y2={height} stroke="var(--succeeded)" stroke-width={2} />}
      {props.p95 !== null && <line x1={x(props.p95)} x2={x(props.p95)} y1={0} y2={height} stroke="var(--failed)" stroke-width={2} />}
      <text x={0} y={height + 12}>
        0 ms
      </text>
      <text x={width - 50} y={height + 12}>
        {Math.round(max)} ms
      </text>
    </svg>
  );
}

export function WindowChart(props: { points: { t: number; window: number; max: number }[] }) {
  const { points } = props;
  if (points.length < 2) return <p class="muted">The window is charted as progress arrives.</p>;
  const width = 360;
  const height = 80;
  const t0 = points[0]?.t ?? 0;
  const span = Math.max(1, (points.at(-1)?.t ?? 0) - t0);
  const top = Math.max(...points.map((p) => p.max), 1);
  const line = points.map((p) => `${((p.t - t0) / span) * width},${height - (p.window / top) * height}`).join(" ");
  return (
    <svg width={width} height={height + 14} role="img" aria-label={`adaptive window, now ${points.at(-1)?.window} of ${top}`}>
      <polyline points={line} fill="none" stroke="var(--accent)" stroke-width={2} />
      <text x={0} y={height + 12}>{`${Math.round(span / 1000)} s`}</text>
      <text x={width - 60} y={10}>{`max ${top}`}</text>
    </svg>
  );
}

export function StackedBars(props: { days: { day: string; byModel: Record<string, number> }[]; models: string[] }) {
  const width = 480;
  const height = 140;
  const totals = props.days.map((d) => Object.values(d.byModel).reduce((a, b) => a + b, 0));
  const top = Math.max(...totals, 1e-9);
  const barW = width / Math.max(1, props.days.length);
  const palette = ["var(--running)", "var(--succeeded)", "var(--retrying)", "var(--skipped)", "var(--failed)", "var(--cancelled)"];
  return (
    <svg width={width} height={height + 28} role="img" aria-label="cost per day by model">
      {props.days.map((d, i) => {
        let y = height;
        return (
          <g>
            {props.models.map((m, k) => {
              const h = ((d.byModel[m] ?? 0) / top) * height;
              y -= h;
              return <rect x={i * barW + 2} y={y} width={barW - 4} height={h} fill={palette[k % palette.length]} />;
            })}
            <text x={i * barW + 2} y={height + 12}>
              {d.day.slice(5)}
            </text>
          </g>
        );
      })}
      {props.models.map((m, k) => (
        <text x={k * 110} y={height + 26} style={{ fill: palette[k % palette.length] }}>
          {`■ ${m}`}
        </text>
      ))}
    </svg>
  );
}
