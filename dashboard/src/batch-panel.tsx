// A batch's swarm, on its page: the batch (OpenAI's Batch object) with its status, counts and its
// input, output and error files. A file downloads through the API with the session's token (a
// plain link would carry none). Read again every few seconds until the batch has ended: its output
// and error file ids appear when it completes.
import { useEffect, useState } from "preact/hooks";
import type { Batch, EdgeswarmClient } from "../../src/client/index.ts";

const ENDED = new Set(["completed", "failed", "expired", "cancelled"]);

export function BatchPanel(props: { client: EdgeswarmClient; batchId: string }) {
  const { client, batchId } = props;
  const [batch, setBatch] = useState<Batch | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    let live = true;
    client
      .getBatch(batchId)
      .then((b) => live && setBatch(b))
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [batchId, tick]);

  const ended = batch !== null && ENDED.has(batch.status);
  useEffect(() => {
    if (ended) return;
    const timer = setTimeout(() => setTick((t) => t + 1), 3_000);
    return () => clearTimeout(timer);
  }, [ended, tick]);

  const download = async (fileId: string, filename: string) => {
    try {
      const blob = await new Response(await client.fileContent(fileId)).blob();
      const url = URL.createObjectURL(blob);
      const link = document.createElement("a");
      link.href = url;
      link.download = filename;
      link.click();
      URL.revokeObjectURL(url);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const files: [label: string, id: string | null][] = [
    ["input", batch?.input_file_id ?? null],
    ["output", batch?.output_file_id ?? null],
    ["error", batch?.error_file_id ?? null],
  ];
  return (
    <div class="panel" data-testid="batch">
      <h3>
        Batch <span class="tag">batch</span>
      </h3>
      <p class="muted">
        {batchId}
        {batch && (
          <>
            {" "}
            · <span data-testid="batch-status">{batch.status}</span> · {batch.request_counts.completed} completed, {batch.request_counts.failed} failed of{" "}
            {batch.request_counts.total}
          </>
        )}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ul>
        {files.map(([label, id]) => (
          <li data-testid={`batch-${label}-file`}>
            {label} file:{" "}
            {id === null ? (
              <span class="muted">{label === "input" ? "—" : ended ? "none" : "when the batch completes"}</span>
            ) : (
              <a
                href={`#download-${id}`}
                onClick={(e) => {
                  e.preventDefault();
                  void download(id, `${batchId}_${label}.jsonl`);
                }}
              >
                {id}
              </a>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}
