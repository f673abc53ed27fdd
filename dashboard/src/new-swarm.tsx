// Start a swarm from a JSON spec, typed or taken from one of examples/ (bundled, so nothing is fetched).
import { useState } from "preact/hooks";
import codeReviewTools from "../../examples/code-review-tools.json";
import codeReview from "../../examples/code-review.json";
import extractJson from "../../examples/extract-json.json";
import researchGoal from "../../examples/research-goal.json";
import research from "../../examples/research.json";
import { type EdgeswarmClient, EdgeswarmError } from "../../src/client/index.ts";
import { hrefOf } from "./route.ts";

const EXAMPLES: Record<string, unknown> = {
  "research.json": research,
  "code-review.json": codeReview,
  "code-review-tools.json": codeReviewTools,
  "extract-json.json": extractJson,
  "research-goal.json": researchGoal,
};

export function NewSwarm(props: { client: EdgeswarmClient; navigate: (hash: string) => void }) {
  const [text, setText] = useState(JSON.stringify(EXAMPLES["research.json"], null, 2));
  const [errors, setErrors] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    let spec: Record<string, unknown>;
    try {
      spec = JSON.parse(text) as Record<string, unknown>;
    } catch (e) {
      setErrors([`not JSON: ${(e as Error).message}`]);
      return;
    }
    setBusy(true);
    try {
      const created = await props.client.createSwarm(spec);
      props.navigate(hrefOf({ page: "swarm", id: created.id }));
    } catch (e) {
      setErrors(e instanceof EdgeswarmError ? [e.message, ...e.details.map((d) => `${d.path}: ${d.message}`)] : [String(e)]);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="new-h">
      <h2 id="new-h">Start a swarm</h2>
      <form onSubmit={submit}>
        <p>
          <label>
            Example{" "}
            <select aria-label="load an example" onChange={(e) => setText(JSON.stringify(EXAMPLES[(e.target as HTMLSelectElement).value], null, 2))}>
              {Object.keys(EXAMPLES).map((name) => (
                <option value={name}>{name}</option>
              ))}
            </select>
          </label>
        </p>
        <label for="spec">Spec (JSON)</label>
        <textarea id="spec" class="spec" value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} spellcheck={false} />
        {errors.length > 0 && (
          <ul class="error" role="alert">
            {errors.map((e) => (
              <li>{e}</li>
            ))}
          </ul>
        )}
        <p>
          <button type="submit" class="primary" disabled={busy}>
            Start swarm
          </button>
        </p>
      </form>
    </section>
  );
}
