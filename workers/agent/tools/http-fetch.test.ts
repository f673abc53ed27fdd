// The http_fetch tool, with an injected fetch that records every request it receives: no test
// reaches the network, and a refused URL or redirect target must never reach the fetch at all.
import { describe, expect, it } from "vitest";
import { HTTP_FETCH_TOOL, runHttpFetch } from "./http-fetch.ts";
import type { HttpFetchSettings } from "./http-fetch.ts";

interface Recorded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
  redirect: string | undefined;
  hasSignal: boolean;
}

type Route = (request: Recorded) => Response | Promise<Response>;

/** A fetch that answers from `routes` by exact URL and records each request; an unknown URL is a network error. */
function fakeFetch(routes: Record<string, Route>) {
  const calls: Recorded[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const recorded: Recorded = {
      url,
      method: init?.method ?? "GET",
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      body: typeof init?.body === "string" ? init.body : null,
      redirect: init?.redirect,
      hasSignal: init?.signal !== undefined && init.signal !== null,
    };
    calls.push(recorded);
    const route = routes[url];
    if (route === undefined) throw new TypeError(`Network connection lost (no route for ${url})`);
    return route(recorded);
  };
  return { fetch, calls };
}

const text = (body: string, status = 200, contentType = "text/plain; charset=utf-8"): Response =>
  new Response(body, { status, headers: { "content-type": contentType } });
const redirect = (status: number, location: string): Response => new Response("moved", { status, headers: { location, "content-type": "text/plain" } });

function settings(fetch: typeof globalThis.fetch, overrides: Partial<HttpFetchSettings> = {}): HttpFetchSettings {
  return {
    policy: { allowlist: ["api.example.com", "*.docs.rs", "cdn.example.net"], allowPrivate: false },
    timeoutMs: 2_000,
    maxResponseBytes: 64 * 1024,
    maxRedirects: 3,
    fetch,
    ...overrides,
  };
}

describe("http_fetch: requests", () => {
  it("GETs an allowlisted URL and shows status, content type and body", async () => {
    const { fetch, calls } = fakeFetch({ "https://api.example.com/items?q=1": () => text('{"items":[1,2]}', 200, "application/json") });
    const result = await runHttpFetch({ url: "https://api.example.com/items?q=1" }, settings(fetch));
    expect(result).toEqual({ ok: true, content: 'HTTP 200 application/json\n\n{"items":[1,2]}' });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ method: "GET", body: null, redirect: "manual", hasSignal: true });
    expect(calls[0]?.headers["user-agent"]).toBe("edgeswarm-http-fetch/1");
  });

  it("POSTs a body with the model's headers", async () => {
    const { fetch, calls } = fakeFetch({ "https://api.example.com/search": () => text("found") });
    const result = await runHttpFetch(
      { url: "https://api.example.com/search", method: "post", body: '{"q":"x"}', headers: { "Content-Type": "application/json", "User-Agent": "my-agent" } },
      settings(fetch),
    );
    expect(result.ok).toBe(true);
    expect(calls[0]).toMatchObject({ method: "POST", body: '{"q":"x"}', headers: { "content-type": "application/json", "user-agent": "my-agent" } });
  });

  it("reports a non-2xx answer as ok: the model sees the status", async () => {
    const { fetch } = fakeFetch({ "https://api.example.com/missing": () => text("no such item", 404) });
    expect(await runHttpFetch({ url: "https://api.example.com/missing" }, settings(fetch))).toEqual({
      ok: true,
      content: "HTTP 404 text/plain; charset=utf-8\n\nno such item",
    });
  });

  it("drops credential, routing and client-identity headers, and says so", async () => {
    const { fetch, calls } = fakeFetch({ "https://api.example.com/": () => text("ok") });
    const result = await runHttpFetch(
      {
        url: "https://api.example.com/",
        headers: {
          Host: "169.254.169.254",
          Cookie: "session=1",
          Authorization: "Bearer stolen",
          "Proxy-Authorization": "Basic x",
          "X-Forwarded-For": "127.0.0.1",
          "X-Forwarded-Host": "internal",
          "CF-Connecting-IP": "10.0.0.1",
          "cf-worker": "x",
          Accept: "text/plain",
          "X-Api-Version": "2",
        },
      },
      settings(fetch),
    );
    expect(calls[0]?.headers).toEqual({ accept: "text/plain", "x-api-version": "2", "user-agent": "edgeswarm-http-fetch/1" });
    expect(result.content).toContain(
      "[request headers not sent: host, cookie, authorization, proxy-authorization, x-forwarded-for, x-forwarded-host, cf-connecting-ip, cf-worker]",
    );
  });

  it("decodes the body in its declared charset", async () => {
    const latin1 = new Response(new Uint8Array([0x63, 0x61, 0x66, 0xe9]), { headers: { "content-type": "text/plain; charset=iso-8859-1" } });
    const { fetch } = fakeFetch({ "https://api.example.com/": () => latin1 });
    expect((await runHttpFetch({ url: "https://api.example.com/" }, settings(fetch))).content).toBe("HTTP 200 text/plain; charset=iso-8859-1\n\ncafé");
  });
});

describe("http_fetch: SSRF", () => {
  it.each([
    ["loopback", "http://127.0.0.1/admin", "host 127.0.0.1 is a loopback address (refused)"],
    ["a private address", "http://10.0.0.1/", "host 10.0.0.1 is a private address (refused)"],
    ["the metadata address", "http://169.254.169.254/latest/meta-data/iam/", "host 169.254.169.254 is a link-local address (refused)"],
    ["IPv6 loopback", "http://[::1]:8080/", "host [::1] is a loopback address (refused)"],
    ["decimal loopback", "http://2130706433/", "host 127.0.0.1 is a loopback address (refused)"],
    ["IPv4-mapped metadata address", "http://[::ffff:169.254.169.254]/", "(IPv4-mapped 169.254.169.254) is a link-local address (refused)"],
  ])("refuses %s without requesting it, even when allowlisted", async (_, url, reason) => {
    const { fetch, calls } = fakeFetch({});
    const everything = { allowlist: ["127.0.0.1", "10.0.0.1", "169.254.169.254", "[::1]", "[::ffff:a9fe:a9fe]"], allowPrivate: false };
    const result = await runHttpFetch({ url }, settings(fetch, { policy: everything }));
    expect(result.ok).toBe(false);
    expect(result.content).toContain(reason);
    expect(calls).toHaveLength(0);
  });

  it.each([
    ["a host not on the allowlist", "https://evil.com/", "host evil.com is not on the swarm's http_allowlist (api.example.com, *.docs.rs, cdn.example.net)"],
    ["ftp:", "ftp://api.example.com/file", "scheme ftp: is not allowed"],
    ["credentials in the URL", "https://user:pw@api.example.com/", "user name or password"],
  ])("refuses %s without requesting it", async (_, url, reason) => {
    const { fetch, calls } = fakeFetch({});
    const result = await runHttpFetch({ url }, settings(fetch));
    expect(result).toEqual({ ok: false, content: expect.stringContaining(reason) });
    expect(calls).toHaveLength(0);
  });

  it.each([
    ["127.0.0.1", "http://127.0.0.1/", "host 127.0.0.1 is a loopback address (refused)"],
    ["10.0.0.1", "http://10.0.0.1/", "host 10.0.0.1 is a private address (refused)"],
    ["169.254.169.254", "http://169.254.169.254/latest/meta-data/", "host 169.254.169.254 is a link-local address (refused)"],
    ["[::1]", "http://[::1]/", "host [::1] is a loopback address (refused)"],
    ["0x7f.1 (= 127.0.0.1)", "http://0x7f.1/", "host 127.0.0.1 is a loopback address (refused)"],
    ["metadata.google.internal", "http://metadata.google.internal/computeMetadata/v1/", "is a cloud metadata name (refused)"],
    ["a host not on the allowlist", "https://attacker.example.org/", "host attacker.example.org is not on the swarm's http_allowlist"],
  ])("refuses an allowlisted host's 302 to %s, without requesting the target", async (_, location, reason) => {
    const { fetch, calls } = fakeFetch({ "https://api.example.com/go": () => redirect(302, location) });
    // Even with the target allowlisted, the address rules hold on every hop.
    const policy = { allowlist: ["api.example.com", "127.0.0.1", "10.0.0.1", "169.254.169.254", "[::1]", "metadata.google.internal"], allowPrivate: false };
    const result = await runHttpFetch({ url: "https://api.example.com/go" }, settings(fetch, { policy }));
    expect(result.ok).toBe(false);
    expect(result.content).toContain("http_fetch refused the redirect from https://api.example.com/go to ");
    expect(result.content).toContain(reason);
    expect(calls.map((call) => call.url)).toEqual(["https://api.example.com/go"]);
  });

  it("lets private targets through when the policy allows them (local development)", async () => {
    const { fetch, calls } = fakeFetch({ "http://127.0.0.1:8787/": () => text("local") });
    const result = await runHttpFetch({ url: "http://127.0.0.1:8787/" }, settings(fetch, { policy: { allowlist: ["127.0.0.1"], allowPrivate: true } }));
    expect(result.ok).toBe(true);
    expect(calls).toHaveLength(1);
  });

  it.each([
    ["169.254.169.254", "http://169.254.169.254/latest/meta-data/", "host 169.254.169.254 is a link-local address (refused)"],
    ["[fd00:ec2::254]", "http://[fd00:ec2::254]/latest/meta-data/", "is a cloud metadata address (refused)"],
    ["metadata.google.internal", "http://metadata.google.internal/computeMetadata/v1/", "is a cloud metadata name (refused)"],
  ])("with private targets allowed, still refuses %s, asked directly or through a local server's redirect", async (host, url, reason) => {
    const { fetch, calls } = fakeFetch({ "http://127.0.0.1:8787/go": () => redirect(302, url) });
    const policy = { allowlist: ["127.0.0.1", host], allowPrivate: true };
    const direct = await runHttpFetch({ url }, settings(fetch, { policy }));
    expect(direct.ok).toBe(false);
    expect(direct.content).toContain(reason);
    const redirected = await runHttpFetch({ url: "http://127.0.0.1:8787/go" }, settings(fetch, { policy }));
    expect(redirected.ok).toBe(false);
    expect(redirected.content).toContain(reason);
    expect(calls.map((call) => call.url)).toEqual(["http://127.0.0.1:8787/go"]);
  });
});

describe("http_fetch: redirects", () => {
  it("follows a relative Location on an allowlisted host, and names the final URL", async () => {
    const { fetch, calls } = fakeFetch({
      "https://api.example.com/old": () => redirect(301, "/new?x=1"),
      "https://api.example.com/new?x=1": () => text("moved here"),
    });
    const result = await runHttpFetch({ url: "https://api.example.com/old" }, settings(fetch));
    expect(result).toEqual({
      ok: true,
      content: "HTTP 200 text/plain; charset=utf-8\n\nmoved here\n\n[followed 1 redirect; final URL https://api.example.com/new?x=1]",
    });
    expect(calls.map((call) => call.url)).toEqual(["https://api.example.com/old", "https://api.example.com/new?x=1"]);
  });

  it("follows a redirect to another allowlisted host", async () => {
    const { fetch, calls } = fakeFetch({
      "https://api.example.com/file": () => redirect(307, "https://cdn.example.net/file"),
      "https://cdn.example.net/file": () => text("file"),
    });
    expect((await runHttpFetch({ url: "https://api.example.com/file" }, settings(fetch))).ok).toBe(true);
    expect(calls).toHaveLength(2);
  });

  it("turns a POST into a GET without body on 303", async () => {
    const { fetch, calls } = fakeFetch({
      "https://api.example.com/jobs": () => redirect(303, "/jobs/7"),
      "https://api.example.com/jobs/7": () => text("job 7"),
    });
    await runHttpFetch({ url: "https://api.example.com/jobs", method: "POST", body: "{}", headers: { "content-type": "application/json" } }, settings(fetch));
    expect(calls[1]).toMatchObject({ method: "GET", body: null });
    expect(calls[1]?.headers["content-type"]).toBeUndefined();
  });

  it("repeats a POST with its body on 307", async () => {
    const { fetch, calls } = fakeFetch({
      "https://api.example.com/jobs": () => redirect(307, "https://api.example.com/v2/jobs"),
      "https://api.example.com/v2/jobs": () => text("created", 201),
    });
    await runHttpFetch({ url: "https://api.example.com/jobs", method: "POST", body: "{}" }, settings(fetch));
    expect(calls[1]).toMatchObject({ method: "POST", body: "{}" });
  });

  it("stops after maxRedirects", async () => {
    const { fetch, calls } = fakeFetch({
      "https://api.example.com/a": () => redirect(302, "/b"),
      "https://api.example.com/b": () => redirect(302, "/a"),
    });
    const result = await runHttpFetch({ url: "https://api.example.com/a" }, settings(fetch, { maxRedirects: 2 }));
    expect(result.ok).toBe(false);
    expect(result.content).toContain("too many redirects (more than 2)");
    expect(calls).toHaveLength(3);
  });

  it("shows a 3xx without Location as an answer", async () => {
    const { fetch } = fakeFetch({ "https://api.example.com/": () => text("not modified", 300) });
    expect(await runHttpFetch({ url: "https://api.example.com/" }, settings(fetch))).toEqual({
      ok: true,
      content: "HTTP 300 text/plain; charset=utf-8\n\nnot modified",
    });
  });
});

describe("http_fetch: limits", () => {
  it("reads at most maxResponseBytes, cancels the rest, and says it cut the body", async () => {
    let cancelled = false;
    let pulls = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls += 1;
        controller.enqueue(new TextEncoder().encode("a".repeat(1_000)));
      },
      cancel() {
        cancelled = true;
      },
    });
    const { fetch } = fakeFetch({ "https://api.example.com/big": () => new Response(endless, { headers: { "content-type": "text/plain" } }) });
    const result = await runHttpFetch({ url: "https://api.example.com/big" }, settings(fetch, { maxResponseBytes: 2_500 }));
    expect(result.ok).toBe(true);
    expect(result.content).toBe(
      `HTTP 200 text/plain\n\n${"a".repeat(2_500)}\n\n[truncated: the body is longer than 2500 bytes; only the first 2500 are shown]`,
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(cancelled).toBe(true);
    expect(pulls).toBeLessThan(10);
  });

  it("does not show a binary body", async () => {
    const { fetch } = fakeFetch({
      "https://api.example.com/logo.png": () =>
        new Response(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), { headers: { "content-type": "image/png", "content-length": "4" } }),
    });
    expect(await runHttpFetch({ url: "https://api.example.com/logo.png" }, settings(fetch))).toEqual({
      ok: true,
      content: "HTTP 200 image/png\n\n[binary content (image/png, 4 bytes) not shown: http_fetch returns text only]",
    });
  });

  it("treats a body without content type that holds NUL bytes as binary", async () => {
    const { fetch } = fakeFetch({ "https://api.example.com/blob": () => new Response(new Uint8Array([1, 0, 2])) });
    const result = await runHttpFetch({ url: "https://api.example.com/blob" }, settings(fetch));
    expect(result.content).toContain("HTTP 200 (no content-type)\n\n[binary content (no content-type, NUL bytes in the body) not shown");
  });

  it("times out a fetch that never answers, aborting it", async () => {
    let aborted = false;
    const hanging: typeof globalThis.fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => {
          aborted = true;
          reject(new DOMException("The operation was aborted", "AbortError"));
        });
      });
    const result = await runHttpFetch({ url: "https://api.example.com/slow" }, settings(hanging, { timeoutMs: 50 }));
    expect(result).toEqual({ ok: false, content: expect.stringContaining("http_fetch timed out after 50 ms (GET https://api.example.com/slow)") });
    expect(aborted).toBe(true);
  });

  it("times out a fetch that ignores the abort signal", async () => {
    const deaf: typeof globalThis.fetch = () => new Promise(() => {});
    const result = await runHttpFetch({ url: "https://api.example.com/slow" }, settings(deaf, { timeoutMs: 50 }));
    expect(result.content).toContain("timed out after 50 ms");
  });

  it("times out a body that stalls after the headers", async () => {
    let cancelled = false;
    const stalled = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("partial"));
      },
      cancel() {
        cancelled = true;
      },
    });
    const { fetch } = fakeFetch({ "https://api.example.com/stall": () => new Response(stalled, { headers: { "content-type": "text/plain" } }) });
    const result = await runHttpFetch({ url: "https://api.example.com/stall" }, settings(fetch, { timeoutMs: 50 }));
    expect(result.ok).toBe(false);
    expect(result.content).toContain("timed out after 50 ms");
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(cancelled).toBe(true);
  });

  it("reports a network error", async () => {
    const { fetch } = fakeFetch({});
    const result = await runHttpFetch({ url: "https://api.example.com/down" }, settings(fetch));
    expect(result).toEqual({ ok: false, content: expect.stringContaining("http_fetch could not reach https://api.example.com/down: Network connection lost") });
  });
});

describe("http_fetch: arguments", () => {
  it.each([
    ["no url", {}, "url: "],
    ["a url that is not a string", { url: 42 }, "url: "],
    ["an unsupported method", { url: "https://api.example.com/", method: "DELETE" }, 'method: method must be "GET" or "POST"'],
    ["a body with GET", { url: "https://api.example.com/", body: "x" }, "body: a body is sent only with POST"],
    ["header values that are not strings", { url: "https://api.example.com/", headers: { "x-n": 1 } }, "header values must be strings"],
    ["an unknown argument", { url: "https://api.example.com/", timeout: 5 }, "timeout"],
    ["an invalid header name", { url: "https://api.example.com/", headers: { "bad header": "x" } }, '"bad header" is not a valid header name'],
    ["a header value with a line break", { url: "https://api.example.com/", headers: { "x-a": "1\r\nx-b: 2" } }, "holds a line break"],
    ["a relative url", { url: "/etc/passwd" }, "is not a valid absolute URL"],
  ])("refuses %s without requesting anything", async (_, args, message) => {
    const { fetch, calls } = fakeFetch({});
    const result = await runHttpFetch(args, settings(fetch));
    expect(result.ok).toBe(false);
    expect(result.content).toContain(message);
    expect(calls).toHaveLength(0);
  });

  it("declares the arguments it accepts", () => {
    const { name, parameters } = HTTP_FETCH_TOOL.function;
    expect(name).toBe("http_fetch");
    expect(parameters.required).toEqual(["url"]);
    expect(Object.keys(parameters.properties)).toEqual(["url", "method", "body", "headers"]);
    expect(parameters.properties.method.enum).toEqual(["GET", "POST"]);
  });
});
