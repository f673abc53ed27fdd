// `edgeswarm/client`: the typed client of the edgeswarm API.
export { EdgeswarmError, type ClientErrorCode } from "./api-error.ts";
export * from "./client-types.ts";
export { createClient, EdgeswarmClient, type ClientOptions, type ConditionalStatus, type RequestOptions } from "./edgeswarm-client.ts";
export type { WatchOptions } from "./watch-events.ts";
export { formatSummary } from "./format-summary.ts";
