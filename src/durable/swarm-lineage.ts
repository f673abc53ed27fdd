// A swarm's lineage for reruns (POST /v1/swarms/:id/rerun): the spec it was started with (less its
// tasks, which the tasks table holds), the swarm it reran, and the reruns started from it.
import type { PlannedTask, SwarmSpec } from "../core/spec-schema.ts";
import type { StartSwarmInput, TaskState } from "../core/swarm-contract.ts";
import { type RerunSelection, selectsForRerun } from "../core/rerun-request.ts";

export type RerunInput =
  | { ok: true; spec: Omit<SwarmSpec, "tasks">; tasks: PlannedTask[] }
  | { ok: false; code: "conflict" | "invalid_request"; message: string; details: { path: string; message: string }[] };

export class SwarmLineage {
  constructor(private readonly sql: SqlStorage) {}

  static migrate(sql: SqlStorage): void {
    sql.exec(`CREATE TABLE IF NOT EXISTS lineage (
      id        INTEGER PRIMARY KEY CHECK (id = 1),
      spec      TEXT NOT NULL,
      parent_id TEXT,
      reruns    TEXT NOT NULL DEFAULT '[]'
    )`);
  }

  record(input: StartSwarmInput): void {
    this.sql.exec("INSERT OR IGNORE INTO lineage (id, spec, parent_id) VALUES (1, ?, ?)", JSON.stringify(input.spec), input.parentId ?? null);
  }

  addRerun(swarmId: string): void {
    this.sql.exec("UPDATE lineage SET reruns = json_insert(reruns, '$[#]', ?) WHERE id = 1", swarmId);
  }

  view(): { parent_id: string | null; reruns: string[] } {
    const row = this.sql.exec<{ parent_id: string | null; reruns: string }>("SELECT parent_id, reruns FROM lineage WHERE id = 1").toArray()[0];
    return row === undefined ? { parent_id: null, reruns: [] } : { parent_id: row.parent_id, reruns: JSON.parse(row.reruns) as string[] };
  }

  /** The spec and the tasks a rerun starts with; the swarm must have ended. */
  rerunInput(finished: boolean, selection: RerunSelection): RerunInput {
    const row = this.sql.exec<{ spec: string }>("SELECT spec FROM lineage WHERE id = 1").toArray()[0];
    if (row === undefined)
      return { ok: false, code: "conflict", message: "this swarm was started before reruns were recorded: it cannot be rerun", details: [] };
    if (!finished) {
      return {
        ok: false,
        code: "conflict",
        message: "the swarm is still running: wait for it to end, or cancel it, then rerun",
        details: [{ path: "state", message: "running" }],
      };
    }
    const tasks = this.sql
      .exec<{ id: string; prompt: string; state: TaskState; long: number }>("SELECT id, prompt, state, long FROM tasks WHERE kind = 'task' ORDER BY seq")
      .toArray();
    let chosen: typeof tasks;
    if (Array.isArray(selection)) {
      const byId = new Map(tasks.map((t) => [t.id, t]));
      const unknown = selection.map((id, i) => ({ id, i })).filter(({ id }) => !byId.has(id));
      if (unknown.length > 0) {
        return {
          ok: false,
          code: "invalid_request",
          message: "no such task in this swarm",
          details: unknown.map(({ id, i }) => ({ path: `tasks.${i}`, message: `unknown task id "${id}"` })),
        };
      }
      const wanted = new Set(selection);
      chosen = tasks.filter((t) => wanted.has(t.id));
    } else {
      chosen = tasks.filter((t) => selectsForRerun(selection, t.state));
    }
    if (chosen.length === 0) {
      return {
        ok: false,
        code: "conflict",
        message: `no task of this swarm matches "${Array.isArray(selection) ? "the ids" : selection}": nothing to rerun`,
        details: [{ path: "tasks", message: "selects no task" }],
      };
    }
    // A goal's rerun runs the planned tasks again, not the planner.
    const { goal: _goal, planner: _planner, ...spec } = JSON.parse(row.spec) as Omit<SwarmSpec, "tasks">;
    return { ok: true, spec, tasks: chosen.map((t) => ({ id: t.id, prompt: t.prompt, ...(t.long === 1 ? { long: true } : {}) })) };
  }
}
