// The agent's port to the KeyPool Durable Objects: the two RPCs a model call makes, and the adapter
// from the KEY_POOL namespace (one object per upstream key id). It decides nothing; tests fake it.
import type { AcquireRequest, AcquireResponse, ReleaseRequest } from "../../src/core/key-pool-contract.ts";
import type { KeyPool } from "../../src/durable/key-pool.ts";

export interface KeyPoolRpc {
  acquire(request: AcquireRequest): Promise<AcquireResponse>;
  release(request: ReleaseRequest): Promise<void>;
}

/** The KeyPool of one upstream key, by key id. */
export type KeyPools = (keyId: string) => KeyPoolRpc;

export function toKeyPools(namespace: DurableObjectNamespace<KeyPool>): KeyPools {
  return (keyId) => namespace.get(namespace.idFromName(keyId));
}
