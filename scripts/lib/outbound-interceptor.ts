// miniflare's outbound interceptor, and the local stack without it.
//
// Under `wrangler dev`, miniflare routes every Worker's global `fetch()` through an interceptor of
// its own (`outbound:<n>`, `src/workers/core/outbound.worker.ts`): a JavaScript Worker on the same
// workerd thread that copies the request's headers to drop `CF-Connecting-IP` and set `CF-Worker`,
// then fetches on. Every model call is then two fetches and two body pipes, and the interceptor's
// isolate wakes for each of the call's events. Production has no such isolate: the edge sets
// `CF-Worker` on a Worker's subrequests outside the Worker. wrangler 4.156 and miniflare 4.2026
// offer no option to leave it out (`getServices` names it the user Worker's `globalOutbound`
// unconditionally; `dev.outboundService` only changes where the interceptor itself fetches).
//
// So the local stack loads wrangler with a module hook (outbound-interceptor-hook.ts) that rewrites
// that one expression as miniflare is loaded: a Worker's `fetch()` then goes to the `internet`
// service, which is what the interceptor itself fetches through (the same allow-list: public and
// private addresses). Measured on a header-bound swarm (1,000 × lognormal 300/1500, W = 100), the
// interceptor cost 0.15–0.2 ms of workerd CPU a task (docs/benchmarks.md). The rewrite names the
// expression exactly and fails the stack's start when a miniflare upgrade changes it, rather than
// leaving the interceptor in silently. EDGESWARM_OUTBOUND_INTERCEPTOR=true keeps it.

/** The expression in miniflare's bundle (dist/src/index.js) that gives a user Worker the interceptor. */
export const INTERCEPTED_OUTBOUND = "globalOutbound: { name: getOutboundInterceptorName(workerIndex) },";

/**
 * The same place without it: the `internet` service, unless a custom outbound service is set
 * (`dev.outboundService`, which `wrangler dev` does not set; the interceptor then stays, to reach it).
 */
export const DIRECT_OUTBOUND = 'globalOutbound: dev?.outboundService === void 0 ? { name: "internet" } : { name: getOutboundInterceptorName(workerIndex) },';

/** The path, inside node_modules, of the module whose source is rewritten. */
export const MINIFLARE_BUNDLE = "/miniflare/dist/src/index.js";

/** The environment variable that keeps the interceptor (`true`); anything else leaves it out. */
export const KEEP_INTERCEPTOR_ENV = "EDGESWARM_OUTBOUND_INTERCEPTOR";

/** Whether `env` asks for miniflare's interceptor to stay (KEEP_INTERCEPTOR_ENV=true). */
export function keepsInterceptor(env: NodeJS.ProcessEnv): boolean {
  return env[KEEP_INTERCEPTOR_ENV] === "true";
}

/**
 * miniflare's bundle with user Workers fetching directly (DIRECT_OUTBOUND). Throws, naming the
 * installed text's mismatch, unless INTERCEPTED_OUTBOUND occurs exactly once.
 */
export function withoutOutboundInterceptor(source: string): string {
  const count = source.split(INTERCEPTED_OUTBOUND).length - 1;
  if (count !== 1) {
    throw new Error(
      `edgeswarm: miniflare's outbound interceptor is named ${count} times in ${MINIFLARE_BUNDLE}, not once (\`${INTERCEPTED_OUTBOUND}\`): this miniflare differs from the one scripts/lib/outbound-interceptor.ts was written for. Set ${KEEP_INTERCEPTOR_ENV}=true to run the stack with the interceptor, or update that file.`,
    );
  }
  return source.replace(INTERCEPTED_OUTBOUND, DIRECT_OUTBOUND);
}
