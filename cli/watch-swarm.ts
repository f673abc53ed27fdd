// Follows a swarm's live events to its end and shows them: a progress bar on a TTY (done, failed,
// retrying, cost, ETA; cli-progress), at most one plain line a second otherwise, NDJSON with --json.
import cliProgress from "cli-progress";
import type { EdgeswarmClient, LiveEvent, SwarmStatus } from "../src/client/index.ts";

export interface WatchOutput {
  mode: "tty" | "plain" | "json";
  /** Where events (json) go: stdout. */
  out: (line: string) => void;
  /** Where progress goes: stderr. */
  err: NodeJS.WritableStream;
}

interface Tally {
  total: number;
  done: number;
  failed: number;
  retrying: number;
  cost: number;
  eta: number | null;
  state: string;
}

/** Follows `id` until `done`; returns the final status. */
export async function watchSwarm(client: EdgeswarmClient, id: string, output: WatchOutput, signal?: AbortSignal): Promise<SwarmStatus> {
  const states = new Map<string, string>();
  const tally: Tally = { total: 0, done: 0, failed: 0, retrying: 0, cost: 0, eta: null, state: "running" };
  const bar =
    output.mode === "tty"
      ? new cliProgress.SingleBar(
          {
            stream: output.err,
            format: "{bar} {value}/{total} done | {failed} failed | {retrying} retrying | {cost} | ETA {eta_text} | {state}",
            hideCursor: true,
            clearOnComplete: false,
            etaBuffer: 50,
          },
          cliProgress.Presets.shades_classic,
        )
      : null;
  let lastLineAt = 0;
  const show = (force = false) => {
    const payload = {
      failed: tally.failed,
      retrying: tally.retrying,
      cost: `$${tally.cost.toFixed(4)}`,
      eta_text: tally.eta === null ? "—" : `${Math.ceil(tally.eta)} s`,
      state: tally.state,
    };
    if (bar !== null) {
      bar.setTotal(Math.max(tally.total, 1));
      bar.update(tally.done, payload);
    } else if (output.mode === "plain" && (force || Date.now() - lastLineAt >= 1_000)) {
      lastLineAt = Date.now();
      output.err.write(
        `${tally.state}: ${tally.done}/${tally.total} done, ${tally.failed} failed, ${tally.retrying} retrying, ${payload.cost}, eta ${payload.eta_text}\n`,
      );
    }
  };
  const recount = () => {
    tally.retrying = [...states.values()].filter((s) => s === "retry_wait").length;
  };
  if (bar !== null) bar.start(1, 0, { failed: 0, retrying: 0, cost: "$0.0000", eta_text: "—", state: "connecting" });
  let final: SwarmStatus | null = null;
  try {
    for await (const event of client.watch(id, signal === undefined ? {} : { signal })) {
      if (output.mode === "json") output.out(JSON.stringify({ id: event.id, type: event.type, data: event.data }));
      apply(event, states, tally);
      recount();
      if (event.type === "done") final = event.data.status;
      show(event.type === "done" || event.type === "snapshot");
    }
  } finally {
    bar?.stop();
  }
  return final ?? (await client.getSwarm(id));
}

function apply(event: LiveEvent, states: Map<string, string>, tally: Tally): void {
  switch (event.type) {
    case "snapshot": {
      states.clear();
      for (const [taskId, state] of event.data.tasks) states.set(taskId, state);
      fromStatus(event.data.status, tally);
      return;
    }
    case "tasks":
      for (const [taskId, state] of event.data.tasks) states.set(taskId, state);
      return;
    case "progress": {
      const p = event.data;
      tally.total = p.tasks;
      tally.done = p.counts.succeeded + p.counts.failed + p.counts.cancelled + p.counts.skipped_budget + p.counts.skipped;
      tally.failed = p.counts.failed;
      tally.cost = p.cost_usd;
      tally.eta = p.eta_s;
      tally.state = p.state;
      return;
    }
    case "done":
      fromStatus(event.data.status, tally);
      tally.eta = null;
      return;
  }
}

function fromStatus(status: SwarmStatus, tally: Tally): void {
  tally.total = status.tasks;
  tally.done = status.counts.succeeded + status.counts.failed + status.counts.cancelled + status.counts.skipped_budget + status.counts.skipped;
  tally.failed = status.counts.failed;
  tally.cost = status.cost_usd;
  tally.state = status.state;
}
