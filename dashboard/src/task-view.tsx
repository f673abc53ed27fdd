// One task's transcript: state, attempts, each model call (tokens, cost, latency), each MCP call
// (server, tool, latency, bytes, error), the messages with tool calls and tool results, the error
// and the output.
import { useEffect, useState } from "preact/hooks";
import type { EdgeswarmClient, TaskTranscript } from "../../src/client/index.ts";
import { hrefOf } from "./route.ts";
import { toGridClass } from "./task-states.ts";

export function TaskView(props: { client: EdgeswarmClient; id: string; taskId: string }) {
  const [t, setT] = useState<TaskTranscript | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    props.client
      .getTask(props.id, props.taskId)
      .then((value) => live && setT(value))
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [props.id, props.taskId]);
  return (
    <section aria-labelledby="task-h">
      <p>
        <a href={hrefOf({ page: "swarm", id: props.id })}>← swarm {props.id}</a>
      </p>
      <h2 id="task-h">Task {props.taskId}</h2>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {t === null ? (
        !error && <p class="muted">Loading…</p>
      ) : (
        <>
          <p>
            <span class="state" data-testid="task-state" style={{ background: `var(--${toGridClass(t.state)})` }}>
              {t.state}
            </span>{" "}
            {t.attempts} attempt(s) · {t.usage.calls} call(s) · {t.usage.total_tokens} tokens · ${t.cost_usd.toFixed(6)}
            {t.model && <> · {t.model}</>}
          </p>
          {t.error && (
            <div class="panel error" data-testid="task-error">
              <b>{t.error.class}</b>: {t.error.message}
            </div>
          )}
          <h3>Calls</h3>
          {t.calls.length === 0 ? (
            <p class="muted">No model call recorded.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>attempt.turn</th>
                  <th>model</th>
                  <th>status</th>
                  <th>prompt / completion tokens</th>
                  <th>cost</th>
                  <th>latency</th>
                </tr>
              </thead>
              <tbody>
                {t.calls.map((c) => (
                  <tr>
                    <td>
                      {c.attempt}.{c.turn}
                    </td>
                    <td>{c.model}</td>
                    <td class={c.status === "ok" ? "" : "error"}>
                      {c.status}
                      {c.error_class && ` (${c.error_class})`}
                    </td>
                    <td>
                      {c.usage.prompt_tokens ?? "?"} / {c.usage.completion_tokens ?? "?"}
                    </td>
                    <td>{c.cost_usd === null ? "—" : `$${c.cost_usd.toFixed(6)}`}</td>
                    <td>{c.latency_ms} ms</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {t.mcp_calls.length > 0 && (
            <>
              <h3>MCP calls</h3>
              <table data-testid="task-mcp-calls">
                <thead>
                  <tr>
                    <th>attempt.turn</th>
                    <th>server</th>
                    <th>tool</th>
                    <th>latency</th>
                    <th>bytes</th>
                    <th>error</th>
                  </tr>
                </thead>
                <tbody>
                  {t.mcp_calls.map((c) => (
                    <tr>
                      <td>
                        {c.attempt}.{c.turn}
                      </td>
                      <td>{c.server}</td>
                      <td>{c.tool}</td>
                      <td>{Math.round(c.latency_ms)} ms</td>
                      <td>{c.bytes}</td>
                      <td class={c.error === null ? "" : "error"}>{c.error ?? "—"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
          <h3>Messages{t.messages_truncated && <span class="muted"> (long parts not kept)</span>}</h3>
          {t.messages.map((m) => (
            <div class={`msg ${m.role}`}>
              <div class="muted">{m.role}</div>
              {m.content !== null && <pre>{m.content}</pre>}
              {m.role === "assistant" &&
                m.tool_calls?.map((tc) => (
                  <pre>
                    → {tc.function.name}({tc.function.arguments})
                  </pre>
                ))}
            </div>
          ))}
          {t.output !== null && (
            <>
              <h3>Output</h3>
              <pre data-testid="task-output">{t.output}</pre>
            </>
          )}
        </>
      )}
    </section>
  );
}
