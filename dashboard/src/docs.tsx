// /docs: the API reference, rendered from the Worker's own /openapi.json (no CDN, no token needed).
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";

type Operation = {
  summary?: string;
  tags?: string[];
  parameters?: { name: string; in: string; required?: boolean; schema?: unknown }[];
  requestBody?: { content: Record<string, { schema?: unknown; examples?: Record<string, { summary?: string; value: unknown }> }> };
  responses?: Record<string, { description?: string }>;
};
type Doc = {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown> };
};

function Docs() {
  const [doc, setDoc] = useState<Doc | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    fetch("/openapi.json")
      .then((r) => r.json() as Promise<Doc>)
      .then(setDoc)
      .catch((e: Error) => setError(e.message));
  }, []);
  if (error) return <p class="error">{error}</p>;
  if (doc === null) return <p class="muted">Loading /openapi.json …</p>;
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));
  return (
    <>
      <header class="top">
        <h1>
          {doc.info.title} API v{doc.info.version}
        </h1>
        <nav aria-label="main">
          <a href="/">Dashboard</a>
          <a href="/openapi.json">openapi.json</a>
        </nav>
      </header>
      <main>
        <p>{doc.info.description}</p>
        <nav aria-label="operations">
          <ul>
            {ops.map(({ path, method, op }) => (
              <li>
                <a href={`#${method}-${path}`}>
                  <span class="method">{method}</span>
                  {path}
                </a>{" "}
                <span class="muted">{op.summary}</span>
              </li>
            ))}
          </ul>
        </nav>
        {ops.map(({ path, method, op }) => (
          <section class="op panel" id={`${method}-${path}`}>
            <h2>
              <span class="method">{method}</span>
              <code>{path}</code>
            </h2>
            <p>{op.summary}</p>
            {(op.parameters ?? []).length > 0 && (
              <table>
                <thead>
                  <tr>
                    <th>parameter</th>
                    <th>in</th>
                    <th>schema</th>
                  </tr>
                </thead>
                <tbody>
                  {(op.parameters ?? []).map((p) => (
                    <tr>
                      <td>
                        <code>{p.name}</code>
                        {p.required && " *"}
                      </td>
                      <td>{p.in}</td>
                      <td>
                        <code>{JSON.stringify(p.schema)}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {Object.entries(op.requestBody?.content ?? {}).map(([type, body]) => (
              <>
                <h3>Request body ({type})</h3>
                {Object.entries(body.examples ?? {}).map(([name, ex]) => (
                  <details>
                    <summary>
                      Example {name}: {ex.summary}
                    </summary>
                    <pre>{JSON.stringify(ex.value, null, 2)}</pre>
                  </details>
                ))}
                <details>
                  <summary>Schema</summary>
                  <pre>{JSON.stringify(body.schema, null, 2)}</pre>
                </details>
              </>
            ))}
            <h3>Responses</h3>
            <ul>
              {Object.entries(op.responses ?? {}).map(([status, r]) => (
                <li>
                  <b>{status}</b> {r.description}
                </li>
              ))}
            </ul>
          </section>
        ))}
        <h2>Schemas</h2>
        {Object.entries(doc.components?.schemas ?? {}).map(([name, schema]) => (
          <details id={`schema-${name}`}>
            <summary>{name}</summary>
            <pre>{JSON.stringify(schema, null, 2)}</pre>
          </details>
        ))}
      </main>
    </>
  );
}

const root = document.getElementById("docs");
if (root !== null) render(<Docs />, root);
