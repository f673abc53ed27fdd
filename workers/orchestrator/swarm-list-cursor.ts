// The opaque cursor of GET /v1/swarms: base64url of `created_at:id` of the last swarm on a page.
// Opaque to clients so the listing order (newest first, ties by id) can change without a new API.
import { isSwarmId } from "../../src/core/ids.ts";

export interface SwarmListCursor {
  /** Epoch ms. */
  createdAt: number;
  id: string;
}

export function toSwarmListCursor(cursor: SwarmListCursor): string {
  return btoa(`${cursor.createdAt}:${cursor.id}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** null when `text` is not a cursor this server issued. */
export function parseSwarmListCursor(text: string): SwarmListCursor | null {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(text)) return null;
  let decoded: string;
  try {
    decoded = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return null;
  }
  const match = /^(\d{1,15}):(.+)$/.exec(decoded);
  if (match === null || match[1] === undefined || match[2] === undefined || !isSwarmId(match[2])) return null;
  return { createdAt: Number(match[1]), id: match[2] };
}
