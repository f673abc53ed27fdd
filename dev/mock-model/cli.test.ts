// Tests the CLI entry: flags, env and a scenario file are applied, one listening line is printed, SIGTERM exits 0.

import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { SIGNATURE_HEADER, signWebhook } from "./webhook.ts";

const serverPath = fileURLToPath(new URL("./server.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "mock-model-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the CLI; resolves with its URL once it printed its listening line. */
async function spawnMock(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; line: string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [serverPath, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("\n")) resolve(out.split("\n")[0] ?? "");
    });
    child.on("exit", () => reject(new Error(`exited early: ${out}`)));
  });
  return { child, url: /http:\/\/127\.0\.0\.1:\d+/.exec(line)?.[0] ?? "", line, exited };
}

it("starts from flags + --scenario, serves, and exits cleanly on SIGTERM", async () => {
  const scenarioFile = join(dir, "scenario.json");
  writeFileSync(scenarioFile, JSON.stringify({ script: ["503"], latency: 5 }));
  const { child, url, line, exited } = await spawnMock([
    "--port",
    "0",
    "--scenario",
    scenarioFile,
    "--rpm-per-key",
    "100",
    "--tpm-per-key",
    "5000",
    "--usage-shape",
    "deepseek",
    "--usage-shape-by-model",
    "y=kimi",
    "--cached-share",
    "0.5",
    "--fault-rate",
    "500=0",
    "--models",
    "x,y",
    "--seed",
    "3",
    "--ttfb",
    "40",
  ]);
  try {
    expect(line).toMatch(/^mock-model listening on http:\/\/127\.0\.0\.1:\d+ \(this is a MOCK model: outputs are fake\)$/);

    const scenario = (await (await fetch(`${url}/admin/scenario`)).json()) as Record<string, unknown>;
    expect(scenario).toEqual({
      seed: 3,
      latency: 5,
      ttfb_ms: 40,
      script: ["503"],
      rpm_per_key: 100,
      tpm_per_key: 5000,
      usage_shape: "deepseek",
      usage_shape_by_model: { y: "kimi" },
      cached_share: 0.5,
      rates: { "500": 0 },
    });
    const models = (await (await fetch(`${url}/v1/models`, { headers: { authorization: "Bearer k" } })).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((m) => m.id)).toEqual(["x", "y"]);
    const call = (): Promise<Response> =>
      fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer k" },
        body: JSON.stringify({ model: "x", messages: [{ role: "user", content: "hi" }] }),
      });
    const first = await call();
    expect(first.status).toBe(503);
    await first.arrayBuffer();
    const second = await call();
    expect(second.status).toBe(200);
    expect(second.headers.get("x-ratelimit-limit-tokens")).toBe("5000");
    expect(((await second.json()) as { usage: Record<string, unknown> }).usage).toMatchObject({ prompt_cache_hit_tokens: 2, prompt_cache_miss_tokens: 3 });
  } finally {
    child.kill("SIGTERM");
  }
  expect(await exited).toBe(0);
});

it("applies --tool-dialect(-by-model), --context-tokens(-by-model), and the webhook secret from WEBHOOK_SECRET or --webhook-secret", async () => {
  const args = [
    "--port",
    "0",
    "--tool-dialect",
    "gemini",
    "--tool-dialect-by-model",
    "x=kimi",
    "--context-tokens",
    "60",
    "--context-tokens-by-model",
    "x=1000",
  ];
  const { child, url, exited } = await spawnMock(args, { WEBHOOK_SECRET: "from-env" });
  try {
    expect(await (await fetch(`${url}/admin/scenario`)).json()).toEqual({ seed: 1, tool_dialect: "gemini", tool_dialect_by_model: { x: "kimi" } });
    const call = (model: string, content: string): Promise<Response> =>
      fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer k" },
        body: JSON.stringify({
          model,
          messages: [{ role: "user", content }],
          tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }],
        }),
      });
    const tooLong = await call("y", "z".repeat(400));
    expect(tooLong.status).toBe(400);
    expect(((await tooLong.json()) as { error: { code: string } }).error.code).toBe("context_length_exceeded");
    const kimi = await call("x", "z".repeat(400));
    expect(((await kimi.json()) as { choices: Array<{ message: { tool_calls: Array<{ id: string }> } }> }).choices[0]?.message.tool_calls[0]?.id).toBe(
      "functions.lookup:0",
    );
    const gemini = await call("y", "hi");
    expect(((await gemini.json()) as { choices: Array<{ message: { tool_calls: Array<{ id: string }> } }> }).choices[0]?.message.tool_calls[0]?.id).toBe("");
    const unsigned = await fetch(`${url}/tools/lint`, { method: "POST", body: "{}" });
    expect(unsigned.status).toBe(401);
    await unsigned.arrayBuffer();
  } finally {
    child.kill("SIGTERM");
  }
  expect(await exited).toBe(0);

  // --webhook-secret wins over the environment.
  const flagged = await spawnMock(["--port", "0", "--webhook-secret", "from-flag"], { WEBHOOK_SECRET: "from-env" });
  try {
    const body = "{}";
    const t = Math.floor(Date.now() / 1000);
    const ok = await fetch(`${flagged.url}/tools/lint`, { method: "POST", headers: { [SIGNATURE_HEADER]: signWebhook("from-flag", body, t) }, body });
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
  } finally {
    flagged.child.kill("SIGTERM");
  }
  expect(await flagged.exited).toBe(0);
});
