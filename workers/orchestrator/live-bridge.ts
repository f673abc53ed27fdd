// GET /v1/swarms/:id/live: the client's WebSocket, bridged to the SwarmRoom's live socket. The
// orchestrator stays in between (rather than handing the room's socket to the client) so it can
// ask again every few seconds whether the caller's key still opens the API: a revoked or expired
// key's open socket closes too (1008, policy violation), as the SSE bridge's stream ends.

/** How often an open socket's key is asked about again. */
export const LIVE_RECHECK_MS = 5_000;

export interface LiveBridgeOptions {
  /** The room's live socket, not yet accepted. */
  room: WebSocket;
  stillAllowed: () => Promise<boolean>;
  recheckMs?: number;
  requestId: string;
}

/** The client's end of a new socket pair, wired to the room's socket. */
export function bridgeLiveSocket(options: LiveBridgeOptions): WebSocket {
  const { room, stillAllowed, recheckMs = LIVE_RECHECK_MS, requestId } = options;
  const pair = new WebSocketPair();
  const [client, server] = [pair[0], pair[1]];
  server.accept();
  room.accept();
  let open = true;
  const closeBoth = (code: number, reason: string): void => {
    if (!open) return;
    open = false;
    clearInterval(timer);
    for (const socket of [server, room]) {
      try {
        socket.close(code, reason);
      } catch {
        // already closed
      }
    }
  };
  room.addEventListener("message", (event) => {
    if (open) server.send(event.data);
  });
  // 1005/1006 mean no code was sent; close() accepts neither.
  const toCode = (code: number): number => (code === 1005 || code === 1006 ? 1000 : code);
  room.addEventListener("close", (event) => closeBoth(toCode(event.code), "the swarm's stream ended"));
  server.addEventListener("close", (event) => closeBoth(toCode(event.code), "the client left"));
  room.addEventListener("error", () => closeBoth(1011, "the swarm's stream failed"));
  server.addEventListener("error", () => closeBoth(1000, "the client's socket failed"));
  const timer = setInterval(() => {
    stillAllowed().then(
      (allowed) => {
        if (!allowed) closeBoth(1008, "the API key was revoked or has expired");
      },
      (error: unknown) => console.error(`[${requestId}] live socket key check failed`, error),
    );
  }, recheckMs);
  return client;
}
