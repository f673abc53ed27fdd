import { describe, expect, it } from "vitest";
import { parseD1List, parseDeployedUrl, parseR2BucketNames, parseSecretList, toQueueExists } from "./deploy-wrangler.ts";

// The outputs below are shaped as wrangler 4.156's handlers print them (wrangler-dist/cli.js:
// d1 list --json, queues info through getQueue, r2 bucket list through formatLabelledValues,
// secret list --format json).
describe("reading wrangler's answers", () => {
  it("d1 list --json: name to id", () => {
    const stdout = JSON.stringify([{ uuid: "1111", name: "edgeswarm", version: "production", num_tables: 3 }]);
    expect(parseD1List(stdout)).toEqual(new Map([["edgeswarm", "1111"]]));
  });

  it.each([
    { name: "an existing queue", run: { code: 0, stdout: "Queue Name: tasks", stderr: "" }, expected: true },
    { name: "a missing queue", run: { code: 1, stdout: "", stderr: '✘ [ERROR] Queue "tasks" does not exist. To create it, run: …' }, expected: false },
  ])("queues info: $name", ({ run, expected }) => {
    expect(toQueueExists(run, "tasks")).toBe(expected);
  });

  it("queues info: another failure throws", () => {
    expect(() => toQueueExists({ code: 1, stdout: "", stderr: "Authentication error [code: 10000]" }, "tasks")).toThrow(/Authentication error/);
  });

  it("r2 bucket list: the names", () => {
    const stdout =
      "Listing buckets...\nname:           artifacts\ncreation_date:  2026-11-01T00:00:00.000Z\n\nname:           logs\ncreation_date:  2026-11-02T00:00:00.000Z\n";
    expect(parseR2BucketNames(stdout)).toEqual(new Set(["artifacts", "logs"]));
  });

  it.each([
    {
      name: "a deployed Worker",
      run: { code: 0, stdout: '[\n  { "name": "API_TOKENS", "type": "secret_text" }\n]', stderr: "" },
      expected: new Set(["API_TOKENS"]),
    },
    { name: "a Worker not deployed yet", run: { code: 1, stdout: "", stderr: "This Worker does not exist on your account. [code: 10007]" }, expected: null },
  ])("secret list: $name", ({ run, expected }) => {
    expect(parseSecretList(run)).toEqual(expected);
  });

  it("deploy: the workers.dev URL", () => {
    const stdout =
      "Uploaded edgeswarm-orchestrator (3.1 sec)\nDeployed edgeswarm-orchestrator triggers (0.5 sec)\n  https://edgeswarm-orchestrator.acme.workers.dev\n  schedule: * * * * *\n";
    expect(parseDeployedUrl(stdout)).toBe("https://edgeswarm-orchestrator.acme.workers.dev");
    expect(parseDeployedUrl("No deploy targets for edgeswarm-agent")).toBeNull();
  });
});
