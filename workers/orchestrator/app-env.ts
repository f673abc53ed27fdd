// The Hono environment of the orchestrator app: its bindings and the per-request variables.
import type { Scope } from "../../src/core/api-scopes.ts";
import type { TenantLimits } from "../../src/core/tenant-limits.ts";
import type { OrchestratorDeps } from "./composition.ts";

/** Who is calling: set by bearerAuth on /v1/* from the key (or API_TOKENS token) presented. */
export interface Caller {
  /** The tenant everything the request reads or writes belongs to: `tn_…`. */
  tenant: string;
  /** `key_…`, or `key_env_…` for a token of the API_TOKENS secret. */
  keyId: string;
  scopes: readonly Scope[];
  /** The tenant's limits, read with the key on this request (shared by all of its keys). */
  limits: TenantLimits;
  /** The key's own API requests a minute, under the tenant's; null = only the tenant's. */
  keyRpm: number | null;
  /** An admin key of the default tenant: it manages every tenant and every key. */
  operator: boolean;
}

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** Set by bearerAuth on /v1/*: the caller's tenant id (`caller.tenant`). */
    tenant: string;
    /** Set by bearerAuth on /v1/*. */
    caller: Caller;
    /** Set by the request-id middleware on every request. */
    requestId: string;
    /** Set on /v1/* from `env` by the composition root, the only reader of `env`. */
    deps: OrchestratorDeps;
    /** Set by `idempotent()` when the request carries an Idempotency-Key it claimed. */
    idempotencyKey?: string;
  };
}
