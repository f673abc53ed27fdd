// Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT, as this project's Worker runs): the SwarmRoom makes
// no trace for a swarm, stores none, and hands lanes no traceparent, so no lane records a span.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { callApi, validSpec } from "./call-api.ts";

const room = (swarmId: string) => env.SWARM_ROOM.get(env.SWARM_ROOM.idFromName(swarmId));

describe("a swarm with tracing off", () => {
  it("has no trace in its room's storage, and its pull answers carry no traceparent", async () => {
    expect(Object.keys(env).filter((name) => name.startsWith("OTEL_"))).toEqual([]);
    const response = await callApi("/v1/swarms", { json: validSpec() });
    expect(response.status).toBe(202);
    const { id } = z.object({ id: z.string() }).parse(await response.json());
    const pulled = await room(id).pull({ ticket: "lane-off", slots: 10, final: false, reports: [], want: 1 });
    expect(pulled.granted.length).toBeGreaterThan(0);
    expect(pulled).not.toHaveProperty("traceparent");
    await runInDurableObject(room(id), (_, state) => {
      expect(state.storage.kv.get("trace")).toBeUndefined();
    });
  });
});
