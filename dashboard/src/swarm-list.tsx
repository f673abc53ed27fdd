// The swarm list: state, progress, cost and age of the tenant's swarms, filtered by state; cancel
// one or the selected ones, rerun a swarm's failed tasks, from the list. Refreshed every few
// seconds while any listed swarm runs.
import { useEffect, useState } from "preact/hooks";
import type { EdgeswarmClient, SwarmListItem } from "../../src/client/index.ts";
import { hrefOf } from "./route.ts";
import { swarmStateClass, TERMINAL } from "./task-states.ts";

const STATES = ["all", "running", "planning", "reducing", "completed", "completed_with_failures", "failed", "cancelled"] as const;

export function ageOf(iso: string): string {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 129600) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function StateBadge(props: { state: string }) {
  return (
    <span class="state" style={{ background: `var(--${swarmStateClass(props.state as never)})` }}>
      {props.state}
    </span>
  );
}

export function SwarmList(props: { client: EdgeswarmClient }) {
  const [swarms, setSwarms] = useState<SwarmListItem[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [filter, setFilter] = useState<(typeof STATES)[number]>("all");
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());

  useEffect(() => {
    let live = true;
    props.client
      .listSwarms({ limit: 100 })
      .then((page) => {
        if (!live) return;
        setSwarms(page.swarms);
        setCursor(page.next_cursor);
        setError(null);
      })
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [tick]);

  const running = swarms?.some((s) => !TERMINAL.has(s.state)) ?? false;
  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(() => setTick((t) => t + 1), 3_000);
    return () => clearTimeout(timer);
  }, [running, tick]);

  const more = async () => {
    if (cursor === null) return;
    const page = await props.client.listSwarms({ limit: 100, cursor });
    setSwarms([...(swarms ?? []), ...page.swarms]);
    setCursor(page.next_cursor);
  };
  const cancel = async (ids: readonly string[]) => {
    const failures: string[] = [];
    await Promise.all(ids.map((id) => props.client.cancel(id).catch((e: Error) => failures.push(`${id}: ${e.message}`))));
    setError(failures.length === 0 ? null : failures.join("; "));
    setSelected(new Set());
    setTick((t) => t + 1);
  };
  const rerunFailed = async (id: string) => {
    try {
      location.hash = hrefOf({ page: "swarm", id: (await props.client.rerun(id, "failed")).id });
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };

  const shown = (swarms ?? []).filter((s) => filter === "all" || s.state === filter);
  return (
    <section aria-labelledby="swarms-h">
      <div class="row" style={{ justifyContent: "space-between", alignItems: "center" }}>
        <h2 id="swarms-h">Swarms</h2>
        <label>
          State{" "}
          <select value={filter} onChange={(e) => setFilter((e.target as HTMLSelectElement).value as (typeof STATES)[number])} aria-label="filter by state">
            {STATES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {selected.size > 0 && (
        <p>
          <button type="button" class="danger" onClick={() => cancel([...selected])}>
            Cancel {selected.size} selected
          </button>
        </p>
      )}
      {swarms === null ? (
        <p class="muted">Loading…</p>
      ) : shown.length === 0 ? (
        <p class="muted">
          No swarms{filter === "all" ? "" : ` in state ${filter}`} yet. <a href={hrefOf({ page: "new" })}>Start one</a>.
        </p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>
                <span class="skip">select</span>
              </th>
              <th>name</th>
              <th>state</th>
              <th>progress</th>
              <th>cost</th>
              <th>age</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {shown.map((s) => {
              const counts = (s.counts ?? {}) as Record<string, number>;
              const ended = (counts.succeeded ?? 0) + (counts.failed ?? 0) + (counts.cancelled ?? 0) + (counts.skipped_budget ?? 0) + (counts.skipped ?? 0);
              return (
                <tr data-swarm={s.id}>
                  <td>
                    {!TERMINAL.has(s.state) && (
                      <input type="checkbox" checked={selected.has(s.id)} onChange={() => toggle(s.id)} aria-label={`select ${s.name}`} />
                    )}
                  </td>
                  <td>
                    <a href={hrefOf({ page: "swarm", id: s.id })}>{s.name}</a>
                    {s.batch_id !== undefined && (
                      <span class="tag" title={`runs ${s.batch_id}`}>
                        batch
                      </span>
                    )}
                    <div class="muted">{s.id}</div>
                  </td>
                  <td>
                    <StateBadge state={s.state} />
                  </td>
                  <td>
                    {ended}/{s.tasks}
                    {(counts.failed ?? 0) > 0 && <span class="error"> ({counts.failed} failed)</span>}
                  </td>
                  <td>${(s.cost_usd ?? 0).toFixed(4)}</td>
                  <td>{ageOf(s.created_at)}</td>
                  <td>
                    {!TERMINAL.has(s.state) && (
                      <button type="button" class="danger" onClick={() => cancel([s.id])} aria-label={`cancel ${s.name}`}>
                        Cancel
                      </button>
                    )}
                    {s.state === "completed_with_failures" && (
                      <button type="button" onClick={() => rerunFailed(s.id)} aria-label={`rerun the failed tasks of ${s.name}`}>
                        Rerun failed
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {cursor !== null && (
        <p>
          <button type="button" onClick={more}>
            Load more
          </button>
        </p>
      )}
    </section>
  );
}
