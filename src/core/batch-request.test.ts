import { describe, expect, it } from "vitest";
import { readBatchIdOf, readBatchOverrides, toBatchObject, toBatchSpec, type BatchRecord } from "./batch-request.ts";

describe("readBatchOverrides", () => {
  it.each([
    [{}, { model: null, maxUsd: null }],
    [{ "edgeswarm.model": "kimi-k2" }, { model: "kimi-k2", maxUsd: null }],
    [
      { "edgeswarm.model": '[{"model":"a","weight":3},{"model":"b","weight":1}]' },
      {
        model: [
          { model: "a", weight: 3 },
          { model: "b", weight: 1 },
        ],
        maxUsd: null,
      },
    ],
    [
      { "edgeswarm.max_usd": "12.5", team: "x" },
      { model: null, maxUsd: 12.5 },
    ],
  ])("reads %j", (metadata, expected) => {
    expect(readBatchOverrides(metadata)).toEqual({ ok: true, value: expected });
  });

  it.each([
    [{ "edgeswarm.model": "has space" }, "metadata.edgeswarm.model"],
    [{ "edgeswarm.model": "[not json" }, "metadata.edgeswarm.model"],
    [{ "edgeswarm.max_usd": "0" }, "metadata.edgeswarm.max_usd"],
    [{ "edgeswarm.max_usd": "1e3" }, "metadata.edgeswarm.max_usd"],
    [{ "edgeswarm.swarm_id": "sw_x" }, "metadata.edgeswarm.swarm_id"],
  ])("refuses %j naming the key", (metadata, path) => {
    expect(readBatchOverrides(metadata)).toMatchObject({ ok: false, error: [{ path }] });
  });
});

describe("toBatchSpec", () => {
  it("is a swarm spec with the batch's model, budget and output limit, labelled with the batch id", () => {
    const spec = toBatchSpec({ batchId: "batch_x", model: "m", maxUsd: 3, maxOutputTokens: 256 });
    expect(spec).toMatchObject({
      name: "batch batch_x",
      model: "m",
      budget: { max_usd: 3 },
      limits: { max_output_tokens: 256 },
      metadata: { "edgeswarm.batch_id": "batch_x" },
    });
    expect("tasks" in spec).toBe(false);
  });
});

describe("toBatchObject", () => {
  const row: BatchRecord = {
    id: "batch_x",
    input_file_id: "file-x",
    endpoint: "/v1/chat/completions",
    completion_window: "24h",
    metadata: '{"team":"a"}',
    swarm_id: "sw_x",
    status: "in_progress",
    errors: null,
    output_file_id: null,
    error_file_id: null,
    total: 4,
    completed: 0,
    failed: 0,
    created_at: 1_000_500,
    in_progress_at: 1_001_000,
    expires_at: 87_401_000,
    finalizing_at: null,
    completed_at: null,
    failed_at: null,
    expired_at: null,
    cancelling_at: null,
    cancelled_at: null,
  };
  const usage = { calls: 3, prompt_tokens: 30, cached_tokens: 3, completion_tokens: 12, total_tokens: 42 };

  it("counts a running batch from its swarm, its usage the swarm's (the ledger's sums), in seconds and with the swarm id", () => {
    const batch = toBatchObject(row, { completed: 2, failed: 1, usage, model: "m" });
    expect(batch).toMatchObject({
      object: "batch",
      status: "in_progress",
      created_at: 1_000,
      in_progress_at: 1_001,
      errors: null,
      request_counts: { total: 4, completed: 2, failed: 1 },
      usage: { input_tokens: 30, input_tokens_details: { cached_tokens: 3 }, output_tokens: 12, total_tokens: 42 },
      metadata: { team: "a", "edgeswarm.swarm_id": "sw_x" },
    });
  });

  it("counts an ended batch from its row, and lists a failed batch's errors", () => {
    const ended = toBatchObject({ ...row, status: "completed", completed: 4, failed: 0 }, { completed: 1, failed: 0, usage, model: "m" });
    expect(ended.request_counts).toEqual({ total: 4, completed: 4, failed: 0 });
    const failed = toBatchObject(
      { ...row, status: "failed", swarm_id: null, errors: '[{"code":"invalid_json_line","message":"m","line":2,"param":null}]' },
      null,
    );
    expect(failed).toMatchObject({ errors: { object: "list", data: [{ code: "invalid_json_line", line: 2 }] }, usage: null, metadata: { team: "a" } });
  });
});

describe("readBatchIdOf", () => {
  it.each([
    ['{"edgeswarm.batch_id":"batch_x","team":"a"}', "batch_x"],
    ['{"team":"a"}', null],
    ['{"edgeswarm.batch_id":7}', null],
    ["not json", null],
    [null, null],
  ])("%j → %j", (metadata, batchId) => {
    expect(readBatchIdOf(metadata)).toBe(batchId);
  });
});
