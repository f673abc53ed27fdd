// The CLI as a CI job runs it: no TTY, NO_COLOR set, against a local fake API. What it prints on
// stdout and stderr, the NDJSON of --json, the exit codes (0, 1, 2, 3) and the requests it sends.
import { spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeApi, startFakeApi } from "./fake-api.ts";
import { CLI, type CliRun, runCli } from "./run-cli.ts";

let api: FakeApi;
let dir: string;

beforeAll(async () => {
  api = await startFakeApi();
  dir = await mkdtemp(path.join(tmpdir(), "edgeswarm-cli-"));
  await writeFile(path.join(dir, "ok.json"), JSON.stringify({ name: "ok", model: "mock-1", tasks: [{ prompt: "a" }, { prompt: "b" }] }));
  await writeFile(path.join(dir, "mixed.json"), JSON.stringify({ name: "mixed", model: "mock-1", tasks: [{ prompt: "a" }] }));
  await writeFile(path.join(dir, "refuse.json"), JSON.stringify({ name: "refuse" }));
  await writeFile(path.join(dir, "broken.json"), "{ not json");
});
afterAll(async () => api.close());

function run(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  return runCli(args, { EDGESWARM_URL: api.url, EDGESWARM_API_TOKEN: "t0k", ...env });
}

const spec = (name: string) => path.join(dir, `${name}.json`);

describe("edgeswarm run", () => {
  it("follows the swarm with plain progress lines when piped, prints the summary and exits 0", async () => {
    const { code, stdout, stderr } = await run(["run", spec("ok")]);
    expect(code).toBe(0);
    expect(stdout).toContain("n=2 ok=2 err=0 wall=2.50 s throughput=0.8 req/s p50=200 ms p95=260 ms tokens=15 cost=$0.001200");
    expect(stdout).toContain("swarm sw_ok completed");
    expect(stderr).toContain("swarm sw_ok started");
    expect(stderr).toMatch(/^running: \d\/2 done, 0 failed, \d retrying, \$0\.0012, eta/m);
    // No TTY: no bar, no cursor control, no colour.
    expect(stdout + stderr).not.toContain(String.fromCharCode(27));
  });

  it("writes NDJSON with --json: every event, resumed across the dropped connection without repeats, then the final status", async () => {
    const { code, stdout } = await run(["--json", "run", spec("ok")]);
    expect(code).toBe(0);
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    const events = lines.slice(0, -1) as { id: number; type: string }[];
    expect(events.map((e) => [e.id, e.type])).toEqual([
      [1, "snapshot"],
      [2, "progress"],
      [3, "tasks"],
      [4, "done"],
    ]);
    expect(lines.at(-1)).toMatchObject({ id: "sw_ok", state: "completed" });
    const resumed = api.requests.filter((r) => r.path === "/v1/swarms/sw_ok/events").at(-1);
    expect(resumed?.headers["last-event-id"]).toBe("2");
  });

  it("takes --json after the command too, as docs/cli-and-client.md writes it (run <spec> --json)", async () => {
    const { code, stdout } = await run(["run", spec("mixed"), "--json"]);
    expect(code).toBe(1);
    const lines = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines.at(-2)).toMatchObject({ type: "done" });
    expect(lines.at(-1)).toMatchObject({ id: "sw_mixed", state: "completed_with_failures" });
  });

  it("exits 1 when some task did not succeed", async () => {
    const { code, stdout } = await run(["run", spec("mixed")]);
    expect(code).toBe(1);
    expect(stdout).toContain("n=2 ok=1 err=1");
  });

  it("returns at once with --no-wait, printing the id", async () => {
    const { code, stdout } = await run(["run", spec("ok"), "--no-wait"]);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe("sw_ok");
  });

  it("exits 3 with the API's code, details and request id when it refuses the spec", async () => {
    const { code, stderr } = await run(["run", spec("refuse")]);
    expect(code).toBe(3);
    expect(stderr).toContain("the API refused (400 invalid_spec): the swarm spec is invalid");
    expect(stderr).toContain("tasks: Required");
    expect(stderr).toContain("request id: req-fake");
  });
});

describe("exit codes of usage and configuration errors", () => {
  it.each([
    { name: "no token", args: ["status", "sw_ok"], env: { EDGESWARM_API_TOKEN: undefined }, code: 2, says: "no API token" },
    { name: "no URL", args: ["status", "sw_ok"], env: { EDGESWARM_URL: undefined }, code: 2, says: "no API URL" },
    { name: "a URL that is not one", args: ["--url", "nope", "status", "sw_ok"], env: {}, code: 2, says: "is not a URL" },
    { name: "a missing spec file", args: ["run", "/nonexistent/spec.json"], env: {}, code: 2, says: "cannot read /nonexistent/spec.json: ENOENT" },
    { name: "a spec that is not JSON", args: ["run", "BROKEN"], env: {}, code: 2, says: "is not JSON" },
    { name: "an unknown command", args: ["frobnicate"], env: {}, code: 2, says: "unknown command" },
    { name: "a missing argument", args: ["status"], env: {}, code: 2, says: "missing required argument" },
    { name: "a bad --format", args: ["results", "sw_ok", "--format", "xml"], env: {}, code: 2, says: "Allowed choices are json, jsonl, md, csv" },
    {
      name: "bad scopes",
      args: ["keys", "create", "--tenant", "tn_1", "--name", "ci", "--scopes", "root"],
      env: {},
      code: 2,
      says: "--scopes takes admin, run, read",
    },
    { name: "two rerun selections", args: ["rerun", "sw_ok", "--failed", "--not-succeeded"], env: {}, code: 2, says: "pass one of" },
    { name: "a wrong token", args: ["status", "sw_ok"], env: { EDGESWARM_API_TOKEN: "wrong" }, code: 3, says: "401 unauthorized" },
    { name: "an unknown swarm", args: ["status", "sw_nope"], env: {}, code: 3, says: "404 not_found" },
    { name: "an API nobody serves", args: ["status", "sw_ok"], env: { EDGESWARM_URL: "http://127.0.0.1:1" }, code: 3, says: "cannot reach" },
  ])("$name → exit $code", async ({ args, env, code, says }) => {
    const result = await run(
      args.map((a) => (a === "BROKEN" ? spec("broken") : a)),
      env,
    );
    expect(result.code).toBe(code);
    expect(result.stderr).toContain(says);
  });

  it("--help exits 0", async () => {
    const { code, stdout } = await run(["--help"]);
    expect(code).toBe(0);
    expect(stdout).toContain("Usage: edgeswarm");
  });
});

describe("edgeswarm results", () => {
  it("follows every page as CSV, quoting what needs it", async () => {
    const { code, stdout } = await run(["results", "sw_ok", "--format", "csv"]);
    expect(code).toBe(0);
    expect(stdout.split("\n").slice(0, 2)).toEqual([
      "task_id,state,attempts,cost_usd,latency_ms,error,output",
      'a,succeeded,1,0.001,100,,"says ""hi"", twice"',
    ]);
    expect(stdout).toContain('b,succeeded,1,0.001,100,,"line one\nline | two"');
  });

  it("as a Markdown table, escaping pipes and line breaks", async () => {
    const { stdout } = await run(["results", "sw_ok", "--format", "md"]);
    expect(stdout).toContain("| b | succeeded | 1 | 0.001 | 100 |  | line one<br>line \\| two |");
  });

  it("stops quietly when its reader closes the pipe early (| head -1)", async () => {
    const child = spawn(process.execPath, [CLI, "results", "sw_ok"], {
      env: { PATH: process.env.PATH, EDGESWARM_URL: api.url, EDGESWARM_API_TOKEN: "t0k", NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    // The reader takes one chunk and leaves.
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(stderr).not.toContain("EPIPE");
    expect(code).toBe(0);
  });

  it("as JSON lines by default, one result a line", async () => {
    const { stdout } = await run(["results", "sw_ok"]);
    expect(
      stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).task_id),
    ).toEqual(["a", "b"]);
  });
});

describe("tenants, keys, usage", () => {
  it("keys create sends the body docs/api.md names and shows the secret once", async () => {
    const { code, stdout } = await run(["keys", "create", "--tenant", "tn_1", "--name", "ci", "--scopes", "run,read", "--rpm", "60"]);
    expect(code).toBe(0);
    expect(api.requests.filter((r) => r.path === "/v1/keys").at(-1)?.body).toEqual({ tenant_id: "tn_1", name: "ci", scopes: ["run", "read"], rpm: 60 });
    expect(stdout).toContain("key: es_local_secret");
  });

  it("keys revoke and rotate call DELETE /v1/keys/:id and POST /v1/keys/:id/rotate", async () => {
    expect((await run(["keys", "revoke", "key_1"])).code).toBe(0);
    expect((await run(["--json", "keys", "rotate", "key_1"])).stdout.trim()).toBe('{"id":"key_1","key":"es_local_new"}');
    expect(api.requests.slice(-2).map((r) => `${r.method} ${r.path}`)).toEqual(["DELETE /v1/keys/key_1", "POST /v1/keys/key_1/rotate"]);
  });

  it("tenants create takes limits as JSON, and refuses what is not", async () => {
    const { code, stdout } = await run(["tenants", "create", "acme", "--limits", '{"rpm":600}']);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe("tn_1");
    expect(api.requests.filter((r) => r.path === "/v1/tenants").at(-1)?.body).toEqual({ name: "acme", limits: { rpm: 600 } });
    expect((await run(["tenants", "create", "acme", "--limits", "rpm=600"])).code).toBe(2);
  });

  it("estimate sends the spec as the body, with the projection beside its fields", async () => {
    const { code, stdout } = await run(["estimate", spec("ok"), "--jobs-per-day", "24"]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ cost_usd: { min: 0.001, max: 0.01 } });
    expect(api.requests.filter((r) => r.path === "/v1/swarms/estimate").at(-1)?.body).toEqual({
      name: "ok",
      model: "mock-1",
      tasks: [{ prompt: "a" }, { prompt: "b" }],
      projection: { jobs_per_day: 24 },
    });
  });

  it("usage passes --from and --group-by as the query", async () => {
    const { code } = await run(["usage", "--from", "2031-01-01", "--group-by", "model"]);
    expect(code).toBe(0);
    expect(api.requests.at(-1)?.path).toBe("/v1/usage?from=2031-01-01&group_by=model");
  });
});

describe("files and batches", () => {
  it("files upload sends the file as multipart with purpose=batch and prints the File", async () => {
    await writeFile(path.join(dir, "in.jsonl"), '{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{}}\n');
    const { code, stdout } = await run(["files", "upload", path.join(dir, "in.jsonl")]);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe("file-abc 42 bytes in.jsonl");
    const sent = String(api.requests.filter((r) => r.path === "/v1/files").at(-1)?.body);
    expect(sent).toMatch(/name="purpose"\r\n\r\nbatch\r\n/);
    expect(sent).toContain('filename="in.jsonl"');
    expect(sent).toContain('{"custom_id":"a"');
  });

  it("files upload of a missing file is a usage error (exit 2)", async () => {
    const { code, stderr } = await run(["files", "upload", path.join(dir, "nope.jsonl")]);
    expect(code).toBe(2);
    expect(stderr).toContain("cannot read");
  });

  it("files get prints the File, or with --content its bytes", async () => {
    expect(JSON.parse((await run(["files", "get", "file-abc"])).stdout)).toMatchObject({ id: "file-abc", bytes: 42 });
    expect((await run(["files", "get", "file-abc", "--content"])).stdout).toBe('{"custom_id":"a"}\n');
  });

  it("batches list prints one line a batch (its counts, swarm and files) and where the next page starts", async () => {
    const list = await run(["batches", "list", "--limit", "2"]);
    expect(list.code).toBe(0);
    expect(list.stdout.split("\n").filter((l) => l !== "")).toEqual([
      "batch_2 in_progress 2/3 done, 1 failed swarm=sw_batch output=file-out errors=-",
      "batch_1 completed 2/3 done, 1 failed swarm=sw_batch output=file-out errors=-",
      "more: --after batch_1",
    ]);
    expect(api.requests.at(-1)?.path).toBe("/v1/batches?limit=2");
  });

  it("batches get prints the batch; cancel with --json prints the Batch object", async () => {
    expect((await run(["batches", "get", "batch_1"])).stdout).toContain("batch_1 completed");
    expect(JSON.parse((await run(["--json", "batches", "cancel", "batch_2"])).stdout)).toMatchObject({ id: "batch_2", status: "cancelling" });
  });

  it("batches get of an unknown batch exits 3 with the API's refusal", async () => {
    const missing = await run(["batches", "get", "batch_9"]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("404 not_found");
  });
});
