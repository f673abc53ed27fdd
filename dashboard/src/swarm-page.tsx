// One swarm, live: the task grid (canvas), counters, cost so far and ETA, the latency histogram,
// the adaptive window over time, the plan, the reduced answer, and cancel / rerun failed. Fed by
// the room's pushed events (client.watch), never by polling the status.
import { useEffect, useRef, useState } from "preact/hooks";
import type { EdgeswarmClient, SwarmStatus } from "../../src/client/index.ts";
import { BATCH_ID_KEY } from "../../src/core/batch-parts.ts";
import type { LiveProgress } from "../../src/core/live-events.ts";
import { toEndedCount } from "../../src/core/swarm-contract.ts";
import { BatchPanel } from "./batch-panel.tsx";
import { LatencyHistogram, WindowChart } from "./charts.tsx";
import { hrefOf } from "./route.ts";
import { StateBadge } from "./swarm-list.tsx";
import { TaskGrid } from "./task-grid.ts";
import { GRID_CLASSES, TERMINAL, toGridClass } from "./task-states.ts";

declare global {
  interface Window {
    /** The page's grid, for the browser tests and the benchmark. */
    edgeswarmGrid?: TaskGrid;
  }
}

export function SwarmPage(props: { client: EdgeswarmClient; id: string; navigate: (hash: string) => void }) {
  const { client, id } = props;
  const canvas = useRef<HTMLCanvasElement>(null);
  const grid = useRef<TaskGrid | null>(null);
  const [status, setStatus] = useState<SwarmStatus | null>(null);
  const [progress, setProgress] = useState<LiveProgress | null>(null);
  const [classes, setClasses] = useState<Record<string, number>>({});
  const [windowPoints, setWindowPoints] = useState<{ t: number; window: number; max: number }[]>([]);
  const [latencies, setLatencies] = useState<number[]>([]);
  const [failedIds, setFailedIds] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (canvas.current === null) return;
    const g = new TaskGrid(canvas.current);
    g.onOpen = (taskId) => props.navigate(hrefOf({ page: "task", id, taskId }));
    grid.current = g;
    window.edgeswarmGrid = g;
    const abort = new AbortController();
    const states = new Map<string, string>();
    const recount = () => {
      const c: Record<string, number> = {};
      for (const s of states.values()) c[s] = (c[s] ?? 0) + 1;
      setClasses(c);
      setFailedIds(
        [...states]
          .filter(([, s]) => s === "failed")
          .map(([t]) => t)
          .slice(0, 50),
      );
    };
    (async () => {
      try {
        for await (const event of client.watch(id, { signal: abort.signal })) {
          if (event.type === "snapshot") {
            states.clear();
            const tasks = event.data.tasks.map(([t, s]) => [t, toGridClass(s)] as [string, (typeof GRID_CLASSES)[number]]);
            for (const [t, s] of tasks) states.set(t, s);
            g.setTasks(tasks);
            setStatus(event.data.status);
            const max = event.data.status.max_window;
            setWindowPoints(event.data.window_history.map(([t, window]) => ({ t, window, max })));
            recount();
          } else if (event.type === "tasks") {
            const changes = event.data.tasks.map(([t, s]) => [t, toGridClass(s)] as [string, (typeof GRID_CLASSES)[number]]);
            for (const [t, s] of changes) states.set(t, s);
            g.update(changes);
            recount();
          } else if (event.type === "progress") {
            const p = event.data;
            setProgress(p);
            setWindowPoints((points) => [...points.slice(-599), { t: Date.now(), window: p.window, max: p.max_window }]);
          } else if (event.type === "done") {
            setStatus(event.data.status);
            setProgress(null);
          }
        }
      } catch (e) {
        if (!abort.signal.aborted) setError((e as Error).message);
      }
    })();
    return () => {
      abort.abort();
      if (window.edgeswarmGrid === g) window.edgeswarmGrid = undefined;
    };
  }, [id]);

  const ended = status !== null && TERMINAL.has(status.state) && progress === null;
  useEffect(() => {
    // The histogram needs each task's latency: read from the results once the swarm has ended.
    if (!ended) return;
    let live = true;
    (async () => {
      const all: number[] = [];
      for await (const r of client.results(id)) if (r.latency_ms !== null) all.push(r.latency_ms);
      if (live) setLatencies(all);
    })().catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [ended, id]);

  const act = async (what: "cancel" | "rerun") => {
    setBusy(true);
    setError(null);
    try {
      if (what === "cancel") await client.cancel(id);
      else props.navigate(hrefOf({ page: "swarm", id: (await client.rerun(id, "failed")).id }));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const counts = progress?.counts ?? status?.counts;
  const cost = progress?.cost_usd ?? status?.cost_usd ?? 0;
  const state = progress?.state ?? status?.state;
  const latency = progress?.latency_ms ?? status?.latency_ms;
  const batchId = status?.metadata?.[BATCH_ID_KEY];
  // A batch's swarm names its batch in its metadata (core/batch-request.ts, toBatchSpec).
  return (
    <section aria-labelledby="swarm-h">
      <p>
        <a href={hrefOf({ page: "list" })}>← swarms</a>
      </p>
      <div class="row" style={{ justifyContent: "space-between", alignItems: "center" }}>
        <h2 id="swarm-h">
          {status?.name ?? id} {state && <StateBadge state={state} />}
        </h2>
        <div class="row">
          <button type="button" class="danger" disabled={busy || state === undefined || TERMINAL.has(state)} onClick={() => act("cancel")}>
            Cancel
          </button>
          <button type="button" disabled={busy || !ended || (counts?.failed ?? 0) === 0} onClick={() => act("rerun")}>
            Rerun failed
          </button>
        </div>
      </div>
      <p class="muted">
        {id}
        {status?.parent_id && (
          <>
            {" "}
            · rerun of <a href={hrefOf({ page: "swarm", id: status.parent_id })}>{status.parent_id}</a>
          </>
        )}
        {status?.reruns && status.reruns.length > 0 && (
          <>
            {" "}
            · reruns:{" "}
            {status.reruns.map((r) => (
              <a href={hrefOf({ page: "swarm", id: r })}>{r} </a>
            ))}
          </>
        )}
        {status?.reason && <> · {status.reason}</>}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {typeof batchId === "string" && <BatchPanel client={client} batchId={batchId} />}
      <div class="counters" aria-live="polite">
        <div class="counter panel">
          <span class="muted">done</span>
          <b data-testid="done">
            {counts ? toEndedCount(counts) : 0}/{progress?.tasks ?? status?.tasks ?? 0}
          </b>
        </div>
        {GRID_CLASSES.map((cls) => (
          <div class="counter panel">
            <span class="muted">
              <span class="swatch" style={{ background: `var(--${cls})` }} />
              {cls}
            </span>
            <b data-testid={`count-${cls}`}>{classes[cls] ?? 0}</b>
          </div>
        ))}
        <div class="counter panel">
          <span class="muted">cost</span>
          <b data-testid="cost">${cost.toFixed(4)}</b>
        </div>
        <div class="counter panel" title="share of prompt tokens the upstream served from its prompt cache, and what that saved (limits.cache_warmup)">
          <span class="muted">cache hit</span>
          <b data-testid="cache-hit">
            {status?.cache === undefined ? "—" : `${Math.round(status.cache.hit_ratio * 100)}% · saved $${status.cache.saved_usd.toFixed(4)}`}
          </b>
        </div>
        <div class="counter panel">
          <span class="muted">ETA</span>
          <b>{progress?.eta_s == null ? "—" : `${Math.ceil(progress.eta_s)} s`}</b>
        </div>
        {status?.hedges && (
          <div class="counter panel" title="backup calls for stragglers (limits.hedge): sent of the limit, how many answered first, what they cost">
            <span class="muted">hedges</span>
            <b data-testid="hedges">
              {status.hedges.sent}/{status.hedges.limit} · {status.hedges.won} won · ${status.hedges.cost_usd.toFixed(4)}
            </b>
          </div>
        )}
        <div class="counter panel">
          <span class="muted">p50 / p95</span>
          <b>
            {latency?.p50 == null ? "—" : Math.round(latency.p50)} / {latency?.p95 == null ? "—" : Math.round(latency.p95)} ms
          </b>
        </div>
      </div>
      <h3>Tasks</h3>
      <p class="muted">Click a cell (or focus the grid, move with the arrow keys and press Enter) to open the task's transcript.</p>
      <div class="grid-wrap">
        <canvas ref={canvas} class="grid" data-testid="grid" />
      </div>
      {failedIds.length > 0 && (
        <p>
          Failed:{" "}
          {failedIds.map((t) => (
            <a href={hrefOf({ page: "task", id, taskId: t })} style={{ marginRight: "0.5rem" }}>
              {t}
            </a>
          ))}
        </p>
      )}
      <div class="row">
        <div class="panel">
          <h3>Latency per task</h3>
          <LatencyHistogram latencies={latencies} p50={latency?.p50 ?? null} p95={latency?.p95 ?? null} />
        </div>
        <div class="panel">
          <h3>Adaptive window</h3>
          <WindowChart points={toWindowLine(windowPoints, status, progress)} />
          <p class="muted">
            now {progress?.window ?? status?.window ?? "—"} of {progress?.max_window ?? status?.max_window ?? "—"}
          </p>
        </div>
      </div>
      {status?.plan && (
        <div class="panel">
          <h3>Plan</h3>
          <p>{status.plan.goal}</p>
          <p class="muted">
            {status.plan.state}: {status.plan.task_count} tasks by {status.plan.model} after {status.plan.attempts} attempt(s)
          </p>
        </div>
      )}
      {status?.output && (
        <div class="panel">
          <h3>Answer ({status.output.kind})</h3>
          <pre data-testid="answer">{toAnswerText(status.output)}</pre>
        </div>
      )}
    </section>
  );
}

/** The reduced answer as text; `collect` lists outputs, which the results pages show better. */
function toAnswerText(output: NonNullable<SwarmStatus["output"]>): string {
  switch (output.kind) {
    case "collect":
      return `${output.results.length} outputs collected${output.truncated ? " (truncated)" : ""}: read them with the results API or \`edgeswarm results\`.\n\n${output.results
        .slice(0, 5)
        .map((r) => JSON.stringify(r))
        .join("\n")}`;
    case "concat":
      return output.text;
    case "llm":
      return output.text ?? "(the final reduction failed)";
    default:
      return JSON.stringify(output, null, 2);
  }
}

/** The samples, then where the window stands now (or stood when the swarm ended): a window that never moved is a flat line. */
function toWindowLine(points: { t: number; window: number; max: number }[], status: SwarmStatus | null, progress: LiveProgress | null) {
  if (status === null || points.length === 0) return points;
  const end = status.finished_at === null ? Date.now() : Date.parse(status.finished_at);
  const last = points.at(-1);
  if (last === undefined || end <= last.t) return points;
  return [...points, { t: end, window: progress?.window ?? status.window, max: progress?.max_window ?? status.max_window }];
}
