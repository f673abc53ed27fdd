import { describe, expect, it } from "vitest";
import { readChatStream, StreamErrorEvent } from "./chat-stream.ts";

/** A streamed response whose body sends `parts` as they are, and records a cancel. */
function streamed(parts: readonly string[], options: { close?: boolean } = {}) {
  const seen = { cancelled: false };
  const encoder = new TextEncoder();
  let index = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const part = parts[index];
      index += 1;
      if (part !== undefined) controller.enqueue(encoder.encode(part));
      else if (options.close !== false) controller.close();
      // close: false — the server sends nothing more and keeps the stream open.
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { response: new Response(body, { headers: { "content-type": "text/event-stream", "x-request-id": "req_1" } }), seen };
}

const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ delta: { content } }] })}\n\n`;

async function read(parts: readonly string[]) {
  const { response, seen } = streamed(parts);
  const chunks: unknown[] = [];
  const result = await readChatStream(response, new AbortController().signal, (c) => chunks.push(c));
  // Let the background read after [DONE] settle.
  await new Promise((resolve) => setTimeout(resolve, 0));
  return { ...result, contents: chunks.map((c) => (c as { choices: [{ delta: { content: string } }] }).choices[0].delta.content), seen };
}

describe("reading a streamed chat completion", () => {
  it.each([
    ["events one per part, then [DONE]", [chunk("a"), chunk("b"), "data: [DONE]\n\n"], ["a", "b"], true],
    ["an event split across parts, mid-JSON and mid-terminator", [chunk("a").slice(0, 9), chunk("a").slice(9, -1), "\n", "data: [DONE]\n\n"], ["a"], true],
    ["several events in one part", [`${chunk("a")}${chunk("b")}data: [DONE]\n\n`], ["a", "b"], true],
    ["CRLF line endings", [chunk("a").replaceAll("\n", "\r\n"), "data: [DONE]\r\n\r\n"], ["a"], true],
    ["a multi-byte character split between parts", ['data: {"choices":[{"delta":{"content":"\u00e9', '"}}]}\n\n', "data: [DONE]\n\n"], ["é"], true],
    ["comments and keep-alives are skipped", [": keep-alive\n\n", chunk("a"), "data: [DONE]\n\n"], ["a"], true],
    ["the body ends without [DONE]: not completed", [chunk("a")], ["a"], false],
    ["a last event without its blank line still counts (as in the SDK)", [chunk("a"), chunk("b").replace(/\n\n$/, "\n")], ["a", "b"], false],
    ["a last line without its line break too", [chunk("a"), chunk("b").trimEnd()], ["a", "b"], false],
    ["nothing after [DONE] is read as an event", [chunk("a"), "data: [DONE]\n\n", chunk("late")], ["a"], true],
  ])("%s", async (_label, parts, contents, completed) => {
    const result = await read(parts);
    expect(result.contents).toEqual(contents);
    expect(result.completed).toBe(completed);
  });

  it("reads the body's end after [DONE] instead of cancelling it, and cancels a body that goes on", async () => {
    expect((await read([chunk("a"), "data: [DONE]\n\n"])).seen.cancelled).toBe(false);
    expect((await read([chunk("a"), "data: [DONE]\n\n", chunk("more"), chunk("and more")])).seen.cancelled).toBe(true);
  });

  it("returns at [DONE] even when the server keeps the body open", async () => {
    const { response } = streamed([chunk("a"), "data: [DONE]\n\n"], { close: false });
    await expect(readChatStream(response, new AbortController().signal, () => {})).resolves.toEqual({ completed: true });
  });

  it.each([
    ["data that is not JSON: a SyntaxError, as the SDK's", ["data: {not json\n\n"], SyntaxError, "Error reading response: malformed server-sent event JSON."],
    ["an error event: its data's error", ['event: error\ndata: {"error":{"message":"overloaded"}}\n\n'], StreamErrorEvent, { message: "overloaded" }],
    [
      "an error event without an error field: its whole data",
      ['event: error\ndata: {"message":"overloaded"}\n\n'],
      StreamErrorEvent,
      { message: "overloaded" },
    ],
    [
      "a chunk carrying an error",
      [chunk("a"), 'data: {"error":{"message":"rate limited","code":429}}\n\n'],
      StreamErrorEvent,
      { message: "rate limited", code: 429 },
    ],
  ])("%s", async (_label, parts, kind, detail) => {
    // More follows the bad event, so the body is still open when the read stops.
    const { response, seen } = streamed([...parts, chunk("after"), chunk("and after")]);
    const error = await readChatStream(response, new AbortController().signal, () => {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(kind);
    if (error instanceof StreamErrorEvent) {
      expect(error.body).toEqual(detail);
      expect(error.headers.get("x-request-id")).toBe("req_1");
    } else expect((error as Error).message).toBe(detail);
    // The rest of a failed stream is not read: its body is cancelled.
    expect(seen.cancelled).toBe(true);
  });

  it("a body that ends cleanly mid-JSON reads as malformed, as in the SDK", async () => {
    const { response } = streamed([chunk("a"), chunk("b").slice(0, 20)]);
    await expect(readChatStream(response, new AbortController().signal, () => {})).rejects.toThrow("Error reading response: malformed server-sent event JSON.");
  });

  it("an abort while waiting on the body cancels it and ends the read, not completed", async () => {
    const { response, seen } = streamed([chunk("a")], { close: false });
    const deadline = new AbortController();
    const chunks: unknown[] = [];
    const reading = readChatStream(response, deadline.signal, (c) => chunks.push(c));
    await new Promise((resolve) => setTimeout(resolve, 20));
    deadline.abort();
    await expect(reading).resolves.toEqual({ completed: false });
    expect(chunks).toHaveLength(1);
    expect(seen.cancelled).toBe(true);
  });

  it("a response without a body, or an aborted signal: nothing read", async () => {
    expect(await readChatStream(new Response(null), new AbortController().signal, () => {})).toEqual({ completed: false });
    const aborted = new AbortController();
    aborted.abort();
    expect(await readChatStream(streamed([chunk("a")]).response, aborted.signal, () => {})).toEqual({ completed: false });
  });
});
