// The tools' fetch behind the header gate (slotted-fetch.ts): a request holds its slot until its
// headers arrive, not while its body streams; one whose signal aborts while it waits leaves the queue
// and its slot, once granted, goes straight back.
import { describe, expect, it } from "vitest";
import { createHeaderGate } from "../header-gate.ts";
import { toSlottedFetch } from "./slotted-fetch.ts";

/** Lets every pending promise callback run. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

/** A network whose answers the test releases one by one: each answer's headers, then its body. */
function heldNetwork() {
  const pending: { answer: (response: Response) => void; url: string }[] = [];
  const fetchFn = ((input: RequestInfo | URL) =>
    new Promise<Response>((answer) => {
      pending.push({ answer, url: new Request(input).url });
    })) as typeof fetch;
  return { fetch: fetchFn, pending };
}

describe("toSlottedFetch", () => {
  it("holds a slot from the request until its headers arrive; a streamed body holds none", async () => {
    const gate = createHeaderGate(1);
    const net = heldNetwork();
    const slotted = toSlottedFetch(net.fetch, gate.acquire);
    const first = slotted("https://tools.example.com/a");
    const second = slotted("https://tools.example.com/b");
    await settle();
    expect(net.pending.map((p) => p.url)).toEqual(["https://tools.example.com/a"]);
    expect(gate.waiting()).toBe(1);
    // Headers in, the body still streaming: the slot goes to the next request.
    const body = new TransformStream<Uint8Array, Uint8Array>();
    net.pending[0]?.answer(new Response(body.readable));
    const response = await first;
    await settle();
    expect(net.pending.map((p) => p.url)).toEqual(["https://tools.example.com/a", "https://tools.example.com/b"]);
    const text = response.text();
    await body.writable.close();
    expect(await text).toBe("");
    net.pending[1]?.answer(new Response("b"));
    expect(await (await second).text()).toBe("b");
  });

  it("lets a request aborted while it waits leave at once; its slot, when granted, goes back", async () => {
    const gate = createHeaderGate(1);
    const net = heldNetwork();
    const slotted = toSlottedFetch(net.fetch, gate.acquire);
    const first = slotted("https://tools.example.com/a");
    const controller = new AbortController();
    const waiting = slotted("https://tools.example.com/late", { signal: controller.signal });
    await settle();
    controller.abort(new Error("the call timed out"));
    await expect(waiting).rejects.toThrow("the call timed out");
    net.pending[0]?.answer(new Response("a"));
    await first;
    await settle();
    // The aborted request was never sent, and the gate is free again.
    expect(net.pending.map((p) => p.url)).toEqual(["https://tools.example.com/a"]);
    const third = slotted("https://tools.example.com/c");
    await settle();
    expect(net.pending.map((p) => p.url)).toEqual(["https://tools.example.com/a", "https://tools.example.com/c"]);
    net.pending[1]?.answer(new Response("c"));
    expect(await (await third).text()).toBe("c");
  });

  it("gives the slot back when the request fails", async () => {
    const gate = createHeaderGate(1);
    const failing = (() => Promise.reject(new TypeError("Network connection lost"))) as typeof fetch;
    const slotted = toSlottedFetch(failing, gate.acquire);
    await expect(slotted("https://tools.example.com/a")).rejects.toThrow("Network connection lost");
    await expect(slotted("https://tools.example.com/b")).rejects.toThrow("Network connection lost");
    expect(gate.waiting()).toBe(0);
  });
});
