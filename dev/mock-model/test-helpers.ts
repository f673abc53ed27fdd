// Shared helpers for the mock-model tests: HTTP calls against a started mock and SSE parsing.

import OpenAI from "openai";
import { afterAll, beforeEach } from "vitest";
import { startMockModel } from "./server.ts";
import type { MockModelHandle } from "./server.ts";

export const KEY = "sk-test-key";
export const AUTH = { authorization: `Bearer ${KEY}`, "content-type": "application/json" } as const;

export interface ChatOpts {
  body?: Record<string, unknown>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export const userBody = (content: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: "mock-1",
  messages: [{ role: "user", content }],
  ...extra,
});

export function chat(mock: MockModelHandle, opts: ChatOpts = {}): Promise<Response> {
  return fetch(`${mock.url}/v1/chat/completions`, {
    method: "POST",
    headers: { ...AUTH, ...opts.headers },
    body: JSON.stringify(opts.body ?? userBody("hello")),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}

/** `data:` payloads of an SSE body, in order. */
export function sseData(text: string): string[] {
  return text
    .split("\n\n")
    .map((e) => e.trim())
    .filter((e) => e.startsWith("data: "))
    .map((e) => e.slice("data: ".length));
}

/** Reads a body to the end, or until it errors; returns what arrived and whether it errored. */
export async function readAll(res: Response): Promise<{ text: string; errored: boolean }> {
  const reader = res.body?.getReader();
  if (!reader) return { text: "", errored: false };
  const dec = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, errored: false };
      text += dec.decode(value, { stream: true });
    }
  } catch {
    return { text, errored: true };
  }
}

/** Polls until `check` passes (for server-side effects of client aborts). */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * One mock model for a test file: started at collection (top-level await), closed after the file,
 * its scenario and stats reset before each test; with an official openai client pointed at it.
 */
export async function useMockModel(): Promise<{ mock: MockModelHandle; client: OpenAI }> {
  const mock = await startMockModel({ port: 0 });
  const client = new OpenAI({ apiKey: KEY, baseURL: `${mock.url}/v1`, maxRetries: 0, timeout: 20_000 });
  afterAll(() => mock.close());
  beforeEach(() => {
    mock.setScenario({});
    mock.resetStats();
  });
  return { mock, client };
}
