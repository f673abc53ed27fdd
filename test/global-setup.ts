// Vitest globalSetup for the Worker projects (runs in Node): starts the mock model on an
// ephemeral loopback port and builds the orchestrator bundle that the agent project loads as an
// auxiliary Worker (an auxiliary Worker needs a pre-built bundle, see docs/testing.md).
import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { TestProject } from "vitest/node";
import { startMockModel } from "../dev/mock-model/server.ts";
import { startMockMcp } from "../dev/mock-mcp/server.ts";
import { startOtlpReceiver } from "../scripts/lib/otlp-receiver.ts";
import { deriveWebhookKey } from "../src/core/webhook-signature.ts";
import { WEBHOOK_TEST_SECRET, WEBHOOK_TEST_TENANT } from "./webhook-test-secret.ts";
import { WRANGLER_OFFLINE_ENV } from "../scripts/lib/wrangler-env.ts";

declare module "vitest" {
  export interface ProvidedContext {
    mockModelUrl: string;
    mockMcpUrl: string;
    /** An OTLP/HTTP receiver (scripts/lib/otlp-receiver.ts): the orchestrator's rooms export to it. */
    otlpUrl: string;
  }
}

const root = path.resolve(import.meta.dirname, "..");
export const ORCHESTRATOR_BUNDLE_DIR = path.join(root, ".tmp", "orchestrator-bundle");

export async function buildOrchestratorBundle(): Promise<void> {
  await mkdir(ORCHESTRATOR_BUNDLE_DIR, { recursive: true });
  await promisify(execFile)(
    process.execPath,
    [path.join(root, "node_modules", "wrangler", "bin", "wrangler.js"), "deploy", "--dry-run", "--outdir", ORCHESTRATOR_BUNDLE_DIR, "-c", "wrangler.toml"],
    { cwd: root, env: { ...process.env, ...WRANGLER_OFFLINE_ENV } },
  );
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The small-context model is the llm reducer's in the hierarchical-reduction tests: a call over
  // its context gets the upstream's 400 context_length_exceeded, as a real model would answer.
  const mock = await startMockModel({
    port: 0,
    latency: 5,
    context_tokens_by_model: { "mock-small-context": 4_000 },
    // The agent signs with the swarm's tenant's key, derived from its WEBHOOK_SECRET.
    webhookSecret: await deriveWebhookKey(WEBHOOK_TEST_SECRET, WEBHOOK_TEST_TENANT),
  });
  project.provide("mockModelUrl", mock.url);
  // The MCP tests' server: 50 ms tools unless a test's URL says otherwise (?latency_ms=).
  const mcp = await startMockMcp({ port: 0, latencyMs: 50 });
  project.provide("mockMcpUrl", mcp.url);
  const receiver = await startOtlpReceiver({ port: 0 });
  project.provide("otlpUrl", receiver.url);
  if (project.name === "agent") await buildOrchestratorBundle();
  return async () => {
    await mock.close();
    await mcp.close();
    await receiver.close();
  };
}
