// The SwarmRoom's circuit breakers, one per model: owns the `circuits` table. Read once per
// instance and written only when a breaker really changes, so a healthy swarm's calls and grants
// cost no circuit row at all.
import { acquireCircuit, CLOSED_CIRCUIT, recordCircuitOutcome, toCurrentCircuit, toHalfOpenAt, type Circuit } from "../core/circuit-breaker.ts";
import type { CircuitRow } from "./swarm-room-rows.ts";

export class SwarmCircuits {
  private circuits: Map<string, Circuit> | null = null;

  constructor(private readonly sql: SqlStorage) {}

  /** The model's breaker as stored (CLOSED when it never failed). */
  get(model: string): Circuit {
    return this.load().get(model) ?? CLOSED_CIRCUIT;
  }

  /** The breaker as of `now` (an open one past its cooldown is half-open). */
  current(model: string, now: number): Circuit {
    return toCurrentCircuit(this.get(model), now);
  }

  /** When the model's open breaker half-opens; null unless open. */
  halfOpenAt(model: string, now: number): number | null {
    return toHalfOpenAt(this.current(model, now));
  }

  /** May a call go to `model` now? With `probe`, a half-open breaker's probe is used up. */
  allows(model: string, now: number, probe: boolean): boolean {
    const { allowed, circuit } = acquireCircuit(this.get(model), now);
    if (allowed && probe) this.save(model, circuit);
    return allowed;
  }

  /** A call to `model` ended; returns true when this opened the breaker. */
  record(model: string, outcome: "success" | "failure", now: number): boolean {
    const before = this.get(model);
    const after = recordCircuitOutcome(before, outcome, now);
    this.save(model, after);
    return after.state === "open" && before.state !== "open";
  }

  private save(model: string, circuit: Circuit): void {
    const before = this.get(model);
    if (
      before.state === circuit.state &&
      before.failures === circuit.failures &&
      before.firstFailureAt === circuit.firstFailureAt &&
      before.openedAt === circuit.openedAt &&
      before.probes === circuit.probes
    ) {
      return;
    }
    this.load().set(model, circuit);
    this.sql.exec(
      `INSERT INTO circuits (model, state, failures, first_failure_at, opened_at, probes) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (model) DO UPDATE SET state = excluded.state, failures = excluded.failures,
         first_failure_at = excluded.first_failure_at, opened_at = excluded.opened_at, probes = excluded.probes`,
      model,
      circuit.state,
      circuit.failures,
      circuit.firstFailureAt,
      circuit.openedAt,
      circuit.probes,
    );
  }

  private load(): Map<string, Circuit> {
    if (this.circuits !== null) return this.circuits;
    this.circuits = new Map(
      this.sql
        .exec<CircuitRow>("SELECT * FROM circuits")
        .toArray()
        .map((row) => [
          row.model,
          { state: row.state, failures: row.failures, firstFailureAt: row.first_failure_at, openedAt: row.opened_at, probes: row.probes },
        ]),
    );
    return this.circuits;
  }
}
