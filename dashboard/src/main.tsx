// The dashboard's shell: the token (from the fragment, then sessionStorage), the theme, the header
// and the page of the current route.
import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { clientFor } from "./api.ts";
import { NewSwarm } from "./new-swarm.tsx";
import { hrefOf, parseRoute } from "./route.ts";
import { SwarmList } from "./swarm-list.tsx";
import { SwarmPage } from "./swarm-page.tsx";
import { TaskView } from "./task-view.tsx";
import { forgetToken, readToken, saveToken } from "./token.ts";
import { UsageView } from "./usage-view.tsx";

const THEMES = ["system", "light", "dark"] as const;

function applyTheme(theme: (typeof THEMES)[number]): void {
  if (theme === "system") document.documentElement.removeAttribute("data-theme");
  else document.documentElement.dataset.theme = theme;
  localStorage.setItem("edgeswarm.theme", theme);
}

function TokenForm(props: { onToken: (token: string) => void }) {
  const [value, setValue] = useState("");
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        if (value.trim() !== "") props.onToken(value.trim());
      }}
    >
      <h2>Sign in</h2>
      <p class="muted">Open the dashboard line `npm start` prints, or paste an API token (kept for this tab only).</p>
      <label for="token">API token</label>{" "}
      <input id="token" type="password" autocomplete="off" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />{" "}
      <button type="submit" class="primary">
        Use token
      </button>
    </form>
  );
}

function App() {
  const [token, setToken] = useState<string | null>(() => readToken());
  const [hash, setHash] = useState(location.hash);
  const [theme, setTheme] = useState<(typeof THEMES)[number]>(() => (localStorage.getItem("edgeswarm.theme") as (typeof THEMES)[number]) ?? "system");
  useEffect(() => {
    const onHash = () => {
      // A new #token=… replaces the session's token.
      if (/(?:^#|&)token=/.test(location.hash)) setToken(readToken());
      setHash(location.hash);
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  useEffect(() => applyTheme(theme), [theme]);
  const client = useMemo(() => (token === null ? null : clientFor(token)), [token]);
  const navigate = (next: string) => {
    location.hash = next;
  };
  const route = parseRoute(hash);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <h1>edgeswarm</h1>
        <nav aria-label="main">
          <a href={hrefOf({ page: "list" })}>Swarms</a>
          <a href={hrefOf({ page: "new" })}>New swarm</a>
          <a href={hrefOf({ page: "usage" })}>Usage</a>
          <a href="/docs">API reference</a>
        </nav>
        <label>
          Theme{" "}
          <select value={theme} onChange={(e) => setTheme((e.target as HTMLSelectElement).value as (typeof THEMES)[number])}>
            {THEMES.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
        {token !== null && (
          <button
            type="button"
            onClick={() => {
              forgetToken();
              setToken(null);
            }}
          >
            Sign out
          </button>
        )}
      </header>
      <main id="main">
        {client === null ? (
          <TokenForm
            onToken={(t) => {
              saveToken(t);
              setToken(t);
            }}
          />
        ) : route.page === "new" ? (
          <NewSwarm client={client} navigate={navigate} />
        ) : route.page === "usage" ? (
          <UsageView client={client} />
        ) : route.page === "swarm" ? (
          <SwarmPage key={route.id} client={client} id={route.id} navigate={navigate} />
        ) : route.page === "task" ? (
          <TaskView client={client} id={route.id} taskId={route.taskId} />
        ) : (
          <SwarmList client={client} />
        )}
      </main>
    </>
  );
}

const root = document.getElementById("app");
if (root !== null) render(<App />, root);
