// Tests the CLI entry: flags and a scenario file are applied, one listening line is printed, SIGTERM exits 0.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

const serverPath = fileURLToPath(new URL("./server.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "mock-model-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("starts from flags + --scenario, serves, and exits cleanly on SIGTERM", async () => {
  const scenarioFile = join(dir, "scenario.json");
  writeFileSync(scenarioFile, JSON.stringify({ script: ["503"], latency: 5 }));
  const child = spawn(process.execPath, [serverPath, "--port", "0", "--scenario", scenarioFile, "--rpm-per-key", "100", "--tpm-per-key", "5000", "--usage-shape", "deepseek", "--usage-shape-by-model", "y=kimi", "--cached-share", "0.5", "--fault-rate", "500=0", "--models", "x,y", "--seed", "3"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("\n")) resolve(out.split("\n")[0] ?? "");
      });
      child.on("exit", () => reject(new Error(`exited early: ${out}`)));
    });
    expect(line).toMatch(/^mock-model listening on http:\/\/127\.0\.0\.1:\d+ \(this is a MOCK model: outputs are fake\)$/);
    const url = /http:\/\/127\.0\.0\.1:\d+/.exec(line)?.[0] ?? "";

    const scenario = (await (await fetch(`${url}/admin/scenario`)).json()) as Record<string, unknown>;
    expect(scenario).toEqual({
      seed: 3,
      latency: 5,
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
      fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { authorization: "Bearer k" }, body: JSON.stringify({ model: "x", messages: [{ role: "user", content: "hi" }] }) });
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
