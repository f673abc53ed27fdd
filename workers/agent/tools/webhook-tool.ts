// A user-declared webhook tool: one call POSTs the model's arguments, signed, to the tool's URL and
// hands the answer back. The URL passes checkWebhookTarget first; redirects are never followed.
// The signature scheme (and what a receiver checks) is in src/core/webhook-signature.ts.
import { checkWebhookTarget } from "../../../src/core/ssrf-guard.ts";
import { SIGNATURE_HEADER, signWebhook } from "../../../src/core/webhook-signature.ts";
import { discardBody, readCappedBody, untilAborted } from "./http-fetch.ts";
import type { ToolResult } from "./http-fetch.ts";
import { toErrorMessage } from "../../../src/core/error-message.ts";

export interface WebhookSettings {
  /** The agent Worker's WEBHOOK_SECRET; null (or empty) when it has none, and then no webhook is called. */
  secret: string | null;
  /** Accept http:// and private or loopback targets (local development only). */
  allowPrivate: boolean;
  timeoutMs: number;
  maxResponseBytes: number;
  fetch: typeof fetch;
  /** Epoch ms; the signature's timestamp. */
  now: () => number;
}

export interface WebhookCall {
  url: string;
  toolName: string;
  arguments: Record<string, unknown>;
  swarmId: string;
  taskId: string;
  /** The model's id for this tool call, as journaled: a call re-run after a crash sends the same one. */
  toolCallId: string;
}

/** Characters of a failed answer's body quoted back to the model. */
const ERROR_EXCERPT_CHARS = 500;

/**
 * Calls the webhook once: `POST <url>` with body `JSON.stringify(arguments)` and headers
 * `content-type: application/json`, `x-edgeswarm-signature`, `x-edgeswarm-swarm-id`,
 * `x-edgeswarm-task-id`, `x-edgeswarm-tool` and `x-edgeswarm-tool-call-id` (with the swarm and task
 * ids, an idempotency key: a crashed task re-runs its tool call with the same id). An id holding
 * anything but printable ASCII goes percent-encoded, as `encodeURIComponent` writes it.
 * A 2xx answer is ok:true with the response text (cut at maxResponseBytes, and said so); anything
 * else, a refused URL, a missing secret, a redirect, a timeout or a network error is ok:false with
 * a message for the model.
 */
export async function runWebhook(call: WebhookCall, settings: WebhookSettings): Promise<ToolResult> {
  const name = call.toolName;
  const target = checkWebhookTarget(call.url, settings.allowPrivate);
  if (!target.ok) return fail(`webhook ${name} refused: ${target.reason}`);
  if (settings.secret === null || settings.secret === "") {
    return fail(
      `webhook ${name} cannot be called: the agent Worker has no WEBHOOK_SECRET to sign webhook requests with (an operator sets it with \`wrangler secret put WEBHOOK_SECRET\`)`,
    );
  }
  const body = JSON.stringify(call.arguments);
  const headers = new Headers({
    "content-type": "application/json",
    [SIGNATURE_HEADER]: await signWebhook(settings.secret, body, Math.floor(settings.now() / 1_000)),
    "x-edgeswarm-swarm-id": toHeaderValue(call.swarmId),
    "x-edgeswarm-task-id": toHeaderValue(call.taskId),
    "x-edgeswarm-tool": toHeaderValue(name),
    "x-edgeswarm-tool-call-id": toHeaderValue(call.toolCallId),
    "user-agent": "edgeswarm-webhook/1",
  });

  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`timed out after ${settings.timeoutMs} ms`)), settings.timeoutMs);
  try {
    // `redirect: "manual"`: a Worker's fetch then resolves to the 3xx itself (workerd follows only
    // in "follow" mode), so a redirect is reported, never followed to an unchecked, unsigned-for host.
    const response = await untilAborted(
      settings.fetch(target.url.href, { method: "POST", headers, body, redirect: "manual", signal: controller.signal }),
      controller.signal,
    );
    if (response.status >= 300 && response.status < 400) {
      discardBody(response);
      const location = response.headers.get("location");
      return fail(
        `webhook ${name} answered HTTP ${response.status}, a redirect${location === null ? "" : ` to ${location.slice(0, 300)}`}; webhook calls do not follow redirects (the tool's url should be the final address)`,
      );
    }
    const read = await readCappedBody(response, settings.maxResponseBytes, controller.signal);
    const text = new TextDecoder().decode(read.bytes);
    if (response.status < 200 || response.status >= 300) {
      const excerpt = text.length > ERROR_EXCERPT_CHARS ? `${text.slice(0, ERROR_EXCERPT_CHARS)}…` : text;
      return fail(`webhook ${name} answered HTTP ${response.status}${excerpt.trim() === "" ? " with an empty body" : `: ${excerpt}`}`);
    }
    if (text === "") return { ok: true, content: `(webhook ${name} answered HTTP ${response.status} with an empty body)` };
    const note = read.truncated
      ? `\n\n[truncated: the answer is longer than ${settings.maxResponseBytes} bytes; only the first ${settings.maxResponseBytes} are shown]`
      : "";
    return { ok: true, content: `${text}${note}` };
  } catch (error) {
    if (controller.signal.aborted) {
      return fail(`webhook ${name} timed out after ${settings.timeoutMs} ms: it did not answer in time; try again later`);
    }
    return fail(`webhook ${name} could not be reached (${target.url.origin}): ${toErrorMessage(error)}`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Header values must be bytes (the Fetch Standard's ByteString; `new Headers` throws on anything
 * above U+00FF) and never hold line breaks. Task ids and model-made tool call ids can hold either, so
 * such a value goes percent-encoded; the usual ASCII ids go as they are.
 */
function toHeaderValue(value: string): string {
  return /^[\x21-\x7e]+$/.test(value) ? value : encodeURIComponent(value);
}

function fail(content: string): ToolResult {
  return { ok: false, content };
}
