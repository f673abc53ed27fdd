// Loaded with `node --import` into each `wrangler dev` session the local stack starts (wrangler's
// bin passes its `execArgv` on to the process that runs its CLI): rewrites miniflare's bundle as it
// is loaded so that user Workers fetch without miniflare's outbound interceptor
// (outbound-interceptor.ts says why). Node's synchronous module hooks see `require()` too, which is
// how wrangler loads miniflare.
import * as nodeModule from "node:module";
import { KEEP_INTERCEPTOR_ENV, MINIFLARE_BUNDLE, withoutOutboundInterceptor } from "./outbound-interceptor.ts";

// Node 22.15 and 23.5 added synchronous hooks; the npm scripts run the project's pinned Node 24.
if (typeof nodeModule.registerHooks !== "function") {
  throw new Error(
    `edgeswarm: Node ${process.version} has no module.registerHooks (22.15 or later): run the stack through npm (it pins Node 24), or set ${KEEP_INTERCEPTOR_ENV}=true`,
  );
}

nodeModule.registerHooks({
  load(url, context, nextLoad) {
    const loaded = nextLoad(url, context);
    if (!url.endsWith(MINIFLARE_BUNDLE) || loaded.source === undefined || loaded.source === null) return loaded;
    const text = typeof loaded.source === "string" ? loaded.source : new TextDecoder().decode(loaded.source);
    return { ...loaded, source: withoutOutboundInterceptor(text) };
  },
});
