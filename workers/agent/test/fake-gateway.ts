// Test doubles for the agent's gateway: the blank config over one model client (no permits), and
// a scriptable fake KeyPool per key that records every acquire and release.
import { parseGatewayConfig } from "../../../src/core/env-settings.ts";
import type { GatewayConfig } from "../../../src/core/gateway-config.ts";
import type { AcquireRequest, AcquireResponse, ReleaseRequest } from "../../../src/core/key-pool-contract.ts";
import type { ModelClient } from "../../../src/model/model-client.ts";
import type { ModelGateway } from "../call-with-permit.ts";
import type { KeyPoolRpc, KeyPools } from "../key-pools.ts";

export function toGatewayConfig(text: string): GatewayConfig {
  const parsed = parseGatewayConfig(text, "http://mock.invalid/v1");
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.value;
}

/** The blank GATEWAY_CONFIG (one key without limits): every call goes straight to `client`, no KeyPool. */
export function directGateway(client: ModelClient): ModelGateway {
  return {
    config: toGatewayConfig(""),
    clientFor: () => client,
    keyPools: (keyId) => {
      throw new Error(`the default key takes no permits, yet KeyPool ${keyId} was asked`);
    },
    permitWaitMaxMs: 20_000,
  };
}

/** One answer of a fake KeyPool's acquire: a grant, a denial, or an RPC that throws. */
export type FakeAcquire = "grant" | { deny: Extract<AcquireResponse, { granted: false }>["reason"]; retryAfterMs: number | null } | "throw";

export class FakeKeyPool implements KeyPoolRpc {
  acquires: AcquireRequest[] = [];
  releases: ReleaseRequest[] = [];
  /** Answers for the next acquires, in order; when empty, `otherwise`. */
  script: FakeAcquire[] = [];
  otherwise: FakeAcquire = "grant";
  releaseThrows = false;
  private granted = 0;

  constructor(
    readonly keyId: string,
    /** Appends `acquire:<key>` / `release:<key>` to order KeyPool calls against model calls. */
    private readonly events: string[] = [],
  ) {}

  async acquire(request: AcquireRequest): Promise<AcquireResponse> {
    this.acquires.push(request);
    this.events.push(`acquire:${this.keyId}`);
    const answer = this.script.shift() ?? this.otherwise;
    if (answer === "throw") throw new Error("KeyPool RPC failed: Durable Object is overloaded");
    if (answer === "grant") {
      this.granted += 1;
      return { granted: true, permitId: `${this.keyId}-permit-${this.granted}` };
    }
    return { granted: false, reason: answer.deny, retryAfterMs: answer.retryAfterMs };
  }

  async release(request: ReleaseRequest): Promise<void> {
    this.releases.push(request);
    this.events.push(`release:${this.keyId}`);
    if (this.releaseThrows) throw new Error("KeyPool RPC failed: network connection lost");
  }
}

export function fakeKeyPools(pools: FakeKeyPool[]): KeyPools {
  return (keyId) => {
    const pool = pools.find((p) => p.keyId === keyId);
    if (pool === undefined) throw new Error(`no fake KeyPool for key ${keyId}`);
    return pool;
  };
}
