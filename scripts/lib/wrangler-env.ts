// Environment for every wrangler child process: no telemetry, no account look-ups, no prompts,
// so nothing leaves loopback locally (WRANGLER_SEND_METRICS and friends).
export const WRANGLER_OFFLINE_ENV: Readonly<Record<string, string>> = {
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_HIDE_BANNER: "true",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_NO_SKILLS_UPDATE_PROMPTS: "true",
};
