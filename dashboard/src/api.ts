// The page's one client of the API: the typed client (edgeswarm/client) on this origin, with the session's token.
import { createClient, type EdgeswarmClient } from "../../src/client/index.ts";

export function clientFor(token: string): EdgeswarmClient {
  return createClient({ baseUrl: location.origin, token });
}
