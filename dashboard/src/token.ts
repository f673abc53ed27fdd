// The API token of the page: taken from the address's fragment (#token=…, as `npm start` prints it),
// kept in sessionStorage and removed from the address bar, so it never sits in history, a query
// string or a server log.
const KEY = "edgeswarm.token";

export function readToken(): string | null {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (match?.[1] !== undefined) {
    sessionStorage.setItem(KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", `${location.pathname}${location.search}#/`);
  }
  return sessionStorage.getItem(KEY);
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
