// The dashboard in Debian's chromium (playwright-core) against the real local stack (`wrangler dev`,
// both Workers, the mock model): start a swarm from the form, watch the grid fill, open a failed
// task's transcript from its cell, rerun the failed tasks, cancel a swarm from the list, a batch's
// swarm labelled as a batch with its files, and a task's MCP calls (dev/mock-mcp) in its transcript.
import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockMcpHandle, startMockMcp } from "../../dev/mock-mcp/server.ts";
import { generateToken, ROOT, type Stack, startStack } from "../../scripts/lib/local-stack.ts";
import { launchChromium } from "./chromium.ts";

/** What the swarm page exposes of its grid (dashboard/src/swarm-page.tsx). */
type GridWindow = { edgeswarmGrid?: { cellCenter(taskId: string): { x: number; y: number } | null } };

const persistTo = path.join(ROOT, ".tmp", "browser-state");
let stack: Stack;
let mcp: MockMcpHandle;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  await rm(persistTo, { recursive: true, force: true });
  mcp = await startMockMcp({ port: 0, latencyMs: 5 });
  stack = await startStack({
    port: 0,
    apiToken: generateToken(),
    mock: { latency: { dist: "normal", mean: 150, stddev: 30 } },
    persistTo,
    log: "capture",
    // The MCP server is the mock on 127.0.0.1 (local development only).
    allowPrivateNetwork: true,
  });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.on("pageerror", (error) => pageErrors.push(error.message));
  await page.goto(`${stack.url}/#token=${encodeURIComponent(stack.token)}`);
});

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await mcp?.close();
});

const spec = (name: string, n: number, attempts = 1) => ({
  name,
  model: "mock-1",
  tasks: Array.from({ length: n }, (_, i) => ({ id: `t-${String(i + 1).padStart(2, "0")}`, prompt: `Task ${i + 1}` })),
  limits: { concurrency: 8, max_output_tokens: 32, timeout_s: 20, max_attempts: attempts },
});

const swarmIdOf = (url: string): string => /#\/swarms\/(sw_[a-z2-7]+)/.exec(url)?.[1] ?? "";

async function startFromForm(body: unknown): Promise<string> {
  await page.click("text=New swarm");
  await page.fill("#spec", JSON.stringify(body, null, 2));
  await page.click("button[type=submit]");
  await page.waitForURL(/#\/swarms\/sw_/);
  return swarmIdOf(page.url());
}

describe("the dashboard", () => {
  it("keeps the token from the fragment and clears it from the address bar", async () => {
    expect(page.url()).toBe(`${stack.url}/#/`);
    expect(await page.evaluate(() => sessionStorage.getItem("edgeswarm.token"))).toBe(stack.token);
  });

  it("starts a swarm from the form and fills its grid live until every task has ended", async () => {
    // A quarter of the calls are refused (400): with one attempt each, those tasks fail.
    stack.mock?.setScenario({ latency: { dist: "normal", mean: 150, stddev: 30 }, rates: { "400": 0.25 }, seed: 7 });
    const id = await startFromForm(spec("browser: grid", 40));
    expect(id).toMatch(/^sw_/);
    await page.waitForFunction(() => document.querySelector("canvas[data-cells]")?.getAttribute("data-cells") === "40");
    const seen = new Set<string>();
    for (;;) {
      const done = (await page.textContent("[data-testid=done]")) ?? "";
      seen.add(done);
      if (done === "40/40") break;
      await page.waitForTimeout(100);
    }
    // The counter moved through intermediate values: the page was fed while the swarm ran.
    expect([...seen].some((d) => d !== "0/40" && d !== "40/40")).toBe(true);
    const failed = Number(await page.textContent("[data-testid=count-failed]"));
    const succeeded = Number(await page.textContent("[data-testid=count-succeeded]"));
    expect(failed + succeeded).toBe(40);
    expect(failed).toBeGreaterThan(0);
    await page.waitForSelector("[data-testid=answer]");
    expect(await page.textContent("[data-testid=cost]")).toMatch(/^\$0\.\d{4}$/);
  });

  it("opens a failed task's transcript when its cell is clicked", async () => {
    const failedId = await page.evaluate(() => document.querySelector<HTMLAnchorElement>("a[href*='/tasks/']")?.textContent ?? "");
    expect(failedId).toMatch(/^t-\d\d$/);
    const at = await page.evaluate((taskId) => (window as GridWindow).edgeswarmGrid?.cellCenter(taskId) ?? null, failedId);
    if (at === null) throw new Error("the grid has no cell for the task");
    await page.mouse.click(at.x, at.y);
    await page.waitForURL(new RegExp(`/tasks/${failedId}$`));
    await page.waitForSelector("[data-testid=task-error]");
    expect(await page.textContent("[data-testid=task-state]")).toBe("failed");
    expect(await page.textContent("[data-testid=task-error]")).toContain("bad_request");
    // The call is listed with its status, and the messages hold the prompt.
    expect(await page.textContent("table")).toContain("error");
    expect(await page.textContent(".msg.user")).toContain("Task ");
  });

  it("reruns the failed tasks as a new swarm that names its parent", async () => {
    stack.mock?.setScenario({ latency: { dist: "normal", mean: 150, stddev: 30 }, seed: 8 });
    await page.goBack();
    await page.waitForSelector("button:has-text('Rerun failed'):not([disabled])");
    const parent = swarmIdOf(page.url());
    const failed = Number(await page.textContent("[data-testid=count-failed]"));
    await page.click("button:has-text('Rerun failed')");
    await page.waitForURL((url) => swarmIdOf(url.href) !== parent && swarmIdOf(url.href) !== "");
    await page.waitForFunction((n) => document.querySelector("[data-testid=done]")?.textContent === `${n}/${n}`, failed);
    expect(await page.textContent("main")).toContain(`rerun of ${parent}`);
    expect(Number(await page.textContent("[data-testid=count-succeeded]"))).toBe(failed);
  });

  it("cancels a running swarm from the list, and the selected ones at once", async () => {
    // Slow calls keep the swarms running while the list is read.
    stack.mock?.setScenario({ latency: 5_000, seed: 9 });
    const id = await startFromForm(spec("browser: cancel me", 30, 3));
    const second = await startFromForm(spec("browser: cancel us 1", 30, 3));
    const third = await startFromForm(spec("browser: cancel us 2", 30, 3));
    await page.click("text=Swarms");
    const row = page.locator(`tr[data-swarm=${id}]`);
    await row.locator("button:has-text('Cancel')").click();
    await row.locator(".state:has-text('cancelled')").waitFor();
    for (const other of [second, third]) await page.locator(`tr[data-swarm=${other}] input[type=checkbox]`).check();
    await page.click("button:has-text('Cancel 2 selected')");
    for (const other of [second, third]) await page.locator(`tr[data-swarm=${other}] .state:has-text('cancelled')`).waitFor();
    stack.mock?.setScenario({ latency: 10, seed: 10 });
    expect(pageErrors).toEqual([]);
  });

  it("labels a batch's swarm as a batch in the list, and its page links the batch's input, output and error files", async () => {
    // Half the calls are refused (400, not retried): the batch has output and error lines.
    stack.mock?.setScenario({ latency: 10, rates: { "400": 0.5 }, seed: 11 });
    const api = async (route: string, init: RequestInit = {}) => {
      const response = await fetch(`${stack.url}${route}`, { ...init, headers: { authorization: `Bearer ${stack.token}`, ...init.headers } });
      expect(response.status).toBe(200);
      return (await response.json()) as Record<string, unknown>;
    };
    const lines = Array.from({ length: 10 }, (_, i) =>
      JSON.stringify({
        custom_id: `req-${i}`,
        method: "POST",
        url: "/v1/chat/completions",
        body: { model: "mock-1", messages: [{ role: "user", content: `q${i}` }] },
      }),
    );
    const form = new FormData();
    form.append("purpose", "batch");
    form.append("file", new Blob([`${lines.join("\n")}\n`]), "browser.jsonl");
    const file = await api("/v1/files", { method: "POST", body: form });
    const batch = await api("/v1/batches", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" }),
    });
    const swarmId = String((batch.metadata as Record<string, string>)["edgeswarm.swarm_id"]);
    // The list reads the swarms when it opens (and again only while one runs): open it afresh.
    await page.click("text=Swarms");
    await page.reload();
    const row = page.locator(`tr[data-swarm=${swarmId}]`);
    await row.locator(".tag:has-text('batch')").waitFor();
    await row.locator(`a[href$='${swarmId}']`).click();
    const panel = page.locator("[data-testid=batch]");
    await panel.locator(`text=${String(batch.id)}`).waitFor();
    expect(await panel.locator("[data-testid=batch-input-file] a").textContent()).toBe(file.id);
    // The files appear once the batch completes (the panel reads it again until it has ended).
    await page.waitForFunction(() => document.querySelector("[data-testid=batch-status]")?.textContent === "completed", undefined, { timeout: 60_000 });
    const ended = await api(`/v1/batches/${String(batch.id)}`);
    const counts = ended.request_counts as { completed: number; failed: number };
    expect(counts.completed + counts.failed).toBe(10);
    expect(counts.completed).toBeGreaterThan(0);
    expect(counts.failed).toBeGreaterThan(0);
    for (const [kind, id, n] of [
      ["output", ended.output_file_id, counts.completed],
      ["error", ended.error_file_id, counts.failed],
    ] as const) {
      const link = panel.locator(`[data-testid=batch-${kind}-file] a`);
      expect(await link.textContent()).toBe(id);
      const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
      const text = await readFile((await download.path()) ?? "", "utf8");
      expect(text.trim().split("\n")).toHaveLength(n);
    }
    stack.mock?.setScenario({ latency: 10, seed: 12 });
    expect(pageErrors).toEqual([]);
  });

  it("lists a task's MCP calls in its transcript: server, tool, latency, bytes, error", async () => {
    const id = await startFromForm({
      name: "browser: mcp",
      model: "mock-1",
      tasks: [{ id: "look-up", prompt: "[mock:parallel=2] Use mcp__code__search_code and mcp__code__failing_tool." }],
      mcp_servers: [{ name: "code", url: `${mcp.url}/mcp`, tools: ["search_code", "failing_tool"] }],
      limits: { concurrency: 2, max_output_tokens: 32, timeout_s: 20 },
    });
    await page.waitForFunction(() => document.querySelector("[data-testid=done]")?.textContent === "1/1");
    await page.goto(`${stack.url}/#/swarms/${id}/tasks/look-up`);
    // The lane's checkpoint after its tool turn (which lists the calls) reaches the room with the
    // call journal's next flush, which may come just after the task's outcome: read it again until then.
    for (let read = 1; ; read += 1) {
      await page.waitForSelector("[data-testid=task-state]");
      if ((await page.$("[data-testid=task-mcp-calls]")) !== null || read === 20) break;
      await page.reload();
    }
    await page.waitForSelector("[data-testid=task-mcp-calls]", { timeout: 1_000 });
    const rows = await page.$$eval("[data-testid=task-mcp-calls] tbody tr", (trs) =>
      trs.map((tr) => Array.from(tr.querySelectorAll("td"), (td) => td.textContent ?? "")),
    );
    expect(rows.map(([turn, server, tool, , , error]) => [turn, server, tool, error]).sort()).toEqual([
      ["1.1", "code", "failing_tool", "isError"],
      ["1.1", "code", "search_code", "—"],
    ]);
    for (const row of rows) {
      expect(row[3]).toMatch(/^\d+ ms$/);
      expect(Number(row[4])).toBeGreaterThan(0);
    }
    expect(pageErrors).toEqual([]);
  });
});
