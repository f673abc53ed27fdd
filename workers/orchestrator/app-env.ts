// The Hono environment of the orchestrator app: its bindings and the per-request variables.
import type { OrchestratorDeps } from "./composition.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** Set by bearerAuth on /v1/*: `tk_` + 16 hex chars of the token's SHA-256. */
    tenant: string;
    /** Set by the request-id middleware on every request. */
    requestId: string;
    /** Set on /v1/* from `env` by the composition root, the only reader of `env`. */
    deps: OrchestratorDeps;
    /** Set by `idempotent()` when the request carries an Idempotency-Key it claimed. */
    idempotencyKey?: string;
  };
}
