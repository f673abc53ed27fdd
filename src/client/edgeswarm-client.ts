// The typed client of the edgeswarm API (`edgeswarm/client`), used by the CLI, the dashboard and
// the scripts. One method per route; every non-2xx answer throws an EdgeswarmError with the API's
// code. Runs wherever fetch does (Node ≥ 22, browsers, Workers); no other runtime dependency.
import type { RerunSelection } from "../core/rerun-request.ts";
import { EdgeswarmError, toEdgeswarmError } from "./api-error.ts";
import type {
  ApiKey,
  ApiKeyWithSecret,
  Batch,
  CreatedSwarm,
  FileObject,
  KeyScope,
  ListPage,
  LiveEvent,
  Me,
  ResultsPage,
  Schedule,
  SpecBody,
  SwarmList,
  SwarmStatus,
  TaskResult,
  TaskTranscript,
  Tenant,
  TenantLimits,
  UsageQuery,
  UsageReport,
} from "./client-types.ts";
import { type WatchOptions, watchEvents } from "./watch-events.ts";

export interface ClientOptions {
  /** e.g. http://127.0.0.1:8787 (a trailing slash is fine). */
  baseUrl: string;
  token: string;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  signal?: AbortSignal;
  /**
   * Sent as Idempotency-Key on the POSTs that start something (create, rerun, schedules). Absent:
   * the client makes one for the call, so its own retries start nothing twice.
   */
  idempotencyKey?: string;
}

/** Tries of a keyed POST: a lost connection, a 5xx or "still in progress" (409 + Retry-After) is sent again under the same key. */
const IDEMPOTENT_TRIES = 4;
const IDEMPOTENT_BACKOFF_MS = [250, 1_000, 2_000];

export class EdgeswarmClient {
  readonly baseUrl: string;
  private readonly token: string;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    // A bare reference to the global fetch loses its `this` in browsers ("Illegal invocation").
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
  }

  // ── swarms ──────────────────────────────────────────────────────────────────────────────────

  createSwarm(spec: SpecBody, options: RequestOptions = {}): Promise<CreatedSwarm> {
    return this.request("POST", "/v1/swarms", { body: spec, idempotent: true, ...options });
  }

  /** `POST /v1/swarms?dry_run=1`: prices the spec, starts nothing. */
  dryRun(spec: SpecBody, options: RequestOptions = {}): Promise<Record<string, unknown>> {
    return this.request("POST", "/v1/swarms?dry_run=1", { body: spec, ...options });
  }

  /** `POST /v1/swarms/estimate`: the spec's price, and with a projection (`jobs_per_day`, `days_per_month?`) a monthly one. */
  estimate(spec: SpecBody, projection?: { jobs_per_day: number; days_per_month?: number }, options: RequestOptions = {}): Promise<Record<string, unknown>> {
    return this.request("POST", "/v1/swarms/estimate", { body: projection === undefined ? spec : { ...spec, projection }, ...options });
  }

  listSwarms(query: { limit?: number; cursor?: string } = {}, options: RequestOptions = {}): Promise<SwarmList> {
    return this.request("GET", `/v1/swarms${toQuery(query)}`, options);
  }

  getSwarm(id: string, options: RequestOptions = {}): Promise<SwarmStatus> {
    return this.request("GET", `/v1/swarms/${encodeURIComponent(id)}`, options);
  }

  /**
   * `GET /v1/swarms/:id` with If-None-Match: `changed: false` while `etag`, the tag of an earlier
   * answer, is still current (the API answered 304 and sent no body). Only an ended swarm's status
   * is tagged (`etag` null while it runs); the tag leaves out the billable meters, which count every read.
   */
  async getSwarmIfChanged(id: string, etag: string | null, options: RequestOptions = {}): Promise<ConditionalStatus> {
    const path = `/v1/swarms/${encodeURIComponent(id)}`;
    const headers = etag === null ? this.headers() : { ...this.headers(), "if-none-match": etag };
    const response = await this.send(path, { headers, signal: options.signal });
    const current = response.headers.get("etag");
    if (response.status === 304) {
      if (current === null) throw new EdgeswarmError({ code: "bad_response", status: 304, message: `GET ${path} answered 304 without an ETag` });
      return { changed: false, etag: current };
    }
    return { changed: true, status: await this.readJson<SwarmStatus>("GET", path, response), etag: current };
  }

  getResultsPage(id: string, query: { cursor?: string; limit?: number } = {}, options: RequestOptions = {}): Promise<ResultsPage> {
    return this.request("GET", `/v1/swarms/${encodeURIComponent(id)}/results${toQuery(query)}`, options);
  }

  /** Every result of the swarm, page by page, in task order. */
  async *results(id: string, query: { limit?: number } = {}, options: RequestOptions = {}): AsyncGenerator<TaskResult> {
    let cursor: string | null = null;
    do {
      const page: ResultsPage = await this.getResultsPage(id, { limit: query.limit ?? 1_000, ...(cursor === null ? {} : { cursor }) }, options);
      yield* page.results;
      cursor = page.next_cursor;
    } while (cursor !== null);
  }

  getPlan(id: string, options: RequestOptions = {}): Promise<Record<string, unknown>> {
    return this.request("GET", `/v1/swarms/${encodeURIComponent(id)}/plan`, options);
  }

  getTask(id: string, taskId: string, options: RequestOptions = {}): Promise<TaskTranscript> {
    return this.request("GET", `/v1/swarms/${encodeURIComponent(id)}/tasks/${encodeURIComponent(taskId)}`, options);
  }

  cancel(id: string, options: RequestOptions = {}): Promise<SwarmStatus> {
    return this.request("POST", `/v1/swarms/${encodeURIComponent(id)}/cancel`, options);
  }

  rerun(id: string, tasks: RerunSelection, options: RequestOptions = {}): Promise<CreatedSwarm & { parent_id: string; tasks: number }> {
    return this.request("POST", `/v1/swarms/${encodeURIComponent(id)}/rerun`, { body: { tasks }, idempotent: true, ...options });
  }

  /** The swarm's live events (snapshot, tasks, progress, done), resumed across dropped connections; ends after `done`. */
  watch(id: string, options: WatchOptions = {}): AsyncGenerator<LiveEvent> {
    return watchEvents({ url: `${this.baseUrl}/v1/swarms/${encodeURIComponent(id)}/events`, headers: this.headers(), fetch: this.fetchImpl }, options);
  }

  // ── usage, schedules ─────────────────────────────────────────────────────────────────────────

  usage(query: UsageQuery = {}, options: RequestOptions = {}): Promise<UsageReport> {
    return this.request("GET", `/v1/usage${toQuery(query)}`, options);
  }

  createSchedule(body: { name: string; cron: string; spec: SpecBody; enabled?: boolean }, options: RequestOptions = {}): Promise<Schedule> {
    return this.request("POST", "/v1/schedules", { body, idempotent: true, ...options });
  }

  listSchedules(options: RequestOptions = {}): Promise<{ schedules: Schedule[] }> {
    return this.request("GET", "/v1/schedules", options);
  }

  deleteSchedule(id: string, options: RequestOptions = {}): Promise<void> {
    return this.request("DELETE", `/v1/schedules/${encodeURIComponent(id)}`, options);
  }

  // ── tenants, keys, me (docs/api.md "Tenants, keys and limits") ───────────────────────────

  createTenant(body: { name: string; limits?: TenantLimits }, options: RequestOptions = {}): Promise<Tenant> {
    return this.request("POST", "/v1/tenants", { body, ...options });
  }

  listTenants(options: RequestOptions = {}): Promise<{ tenants: Tenant[] }> {
    return this.request("GET", "/v1/tenants", options);
  }

  getTenant(id: string, options: RequestOptions = {}): Promise<Tenant> {
    return this.request("GET", `/v1/tenants/${encodeURIComponent(id)}`, options);
  }

  updateTenant(id: string, body: { name?: string; limits?: TenantLimits }, options: RequestOptions = {}): Promise<Tenant> {
    return this.request("PATCH", `/v1/tenants/${encodeURIComponent(id)}`, { body, ...options });
  }

  deleteTenant(id: string, options: RequestOptions = {}): Promise<void> {
    return this.request("DELETE", `/v1/tenants/${encodeURIComponent(id)}`, options);
  }

  createKey(
    body: { tenant_id: string; name: string; scopes: KeyScope[]; expires_at?: string; rpm?: number },
    options: RequestOptions = {},
  ): Promise<ApiKeyWithSecret> {
    return this.request("POST", "/v1/keys", { body, ...options });
  }

  listKeys(options: RequestOptions = {}): Promise<{ keys: ApiKey[] }> {
    return this.request("GET", "/v1/keys", options);
  }

  revokeKey(id: string, options: RequestOptions = {}): Promise<void> {
    return this.request("DELETE", `/v1/keys/${encodeURIComponent(id)}`, options);
  }

  rotateKey(id: string, options: RequestOptions = {}): Promise<ApiKeyWithSecret> {
    return this.request("POST", `/v1/keys/${encodeURIComponent(id)}/rotate`, options);
  }

  me(options: RequestOptions = {}): Promise<Me> {
    return this.request("GET", "/v1/me", options);
  }

  // ── files and batches (OpenAI's shapes) ──────────────────────────────────────────────────────

  /** Uploads a batch input file; a Blob from `fs.openAsBlob` streams from disk. */
  uploadFile(file: Blob, filename: string, options: RequestOptions = {}): Promise<FileObject> {
    const form = new FormData();
    form.append("purpose", "batch");
    form.append("file", file, filename);
    return this.request("POST", "/v1/files", { form, ...options });
  }

  getFile(id: string, options: RequestOptions = {}): Promise<FileObject> {
    return this.request("GET", `/v1/files/${encodeURIComponent(id)}`, options);
  }

  /** A file's bytes, as a stream. */
  async fileContent(id: string, options: RequestOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const response = await this.fetchImpl(`${this.baseUrl}/v1/files/${encodeURIComponent(id)}/content`, { headers: this.headers(), signal: options.signal });
    if (!response.ok || response.body === null) throw toEdgeswarmError(response.status, await response.text(), response.headers.get("retry-after"));
    return response.body;
  }

  listBatches(query: { after?: string; limit?: number } = {}, options: RequestOptions = {}): Promise<ListPage<Batch>> {
    return this.request("GET", `/v1/batches${toQuery(query)}`, options);
  }

  getBatch(id: string, options: RequestOptions = {}): Promise<Batch> {
    return this.request("GET", `/v1/batches/${encodeURIComponent(id)}`, options);
  }

  cancelBatch(id: string, options: RequestOptions = {}): Promise<Batch> {
    return this.request("POST", `/v1/batches/${encodeURIComponent(id)}/cancel`, options);
  }

  // ── transport ────────────────────────────────────────────────────────────────────────────────

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.token}` };
  }

  /**
   * A POST that starts something goes with an Idempotency-Key (the caller's, or one made here), so
   * it can be sent again safely: after a lost connection, a 5xx, or a 409 saying the first request
   * with the key is still running, it is, up to IDEMPOTENT_TRIES times, under the same key.
   */
  private async request<T>(method: string, path: string, options: RequestOptions & { body?: unknown; form?: FormData; idempotent?: boolean } = {}): Promise<T> {
    if (options.idempotent !== true) return this.requestOnce(method, path, options);
    const idempotencyKey = options.idempotencyKey ?? crypto.randomUUID();
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.requestOnce<T>(method, path, { ...options, idempotencyKey });
      } catch (error) {
        const again =
          error instanceof EdgeswarmError &&
          (error.code === "network" || error.status >= 500 || (error.status === 409 && error.retryAfterS !== null)) &&
          options.signal?.aborted !== true;
        if (!again || attempt >= IDEMPOTENT_TRIES) throw error;
        const waitMs = Math.max((error.retryAfterS ?? 0) * 1_000, IDEMPOTENT_BACKOFF_MS[attempt - 1] ?? 2_000);
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }

  private async requestOnce<T>(method: string, path: string, options: RequestOptions & { body?: unknown; form?: FormData } = {}): Promise<T> {
    const headers: Record<string, string> = this.headers();
    if (options.body !== undefined) headers["content-type"] = "application/json";
    if (options.idempotencyKey !== undefined) headers["idempotency-key"] = options.idempotencyKey;
    const response = await this.send(path, {
      method,
      headers,
      // A form sets its own multipart content type (with its boundary).
      body: options.form ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      signal: options.signal,
    });
    return this.readJson<T>(method, path, response);
  }

  /** One fetch of the API; a connection that fails is an EdgeswarmError with code `network`. */
  private async send(path: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetchImpl(`${this.baseUrl}${path}`, init);
    } catch (error) {
      throw new EdgeswarmError({
        code: "network",
        status: 0,
        message: `cannot reach ${this.baseUrl}: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
  }

  /** The answer's JSON; a non-2xx answer is an EdgeswarmError with the API's code. */
  private async readJson<T>(method: string, path: string, response: Response): Promise<T> {
    const text = await response.text();
    if (!response.ok) throw toEdgeswarmError(response.status, text, response.headers.get("retry-after"));
    if (text === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new EdgeswarmError({ code: "bad_response", status: response.status, message: `${method} ${path} answered with something other than JSON` });
    }
  }
}

function toQuery(query: { [key: string]: string | number | undefined } | UsageQuery): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

/** What a conditional status read gives (EdgeswarmClient.getSwarmIfChanged). */
export type ConditionalStatus = { changed: true; status: SwarmStatus; etag: string | null } | { changed: false; etag: string };

export function createClient(options: ClientOptions): EdgeswarmClient {
  return new EdgeswarmClient(options);
}
