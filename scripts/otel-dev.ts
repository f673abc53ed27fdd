// `npm run otel-dev`: an OTLP/HTTP receiver on 127.0.0.1:4318 (protobuf and JSON) that prints each
// swarm's trace as a tree (latency, tokens, cost) once its root span has arrived and its lanes'
// spans have stopped coming. Point the stack at it: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 npm start
import { readIntOption } from "./lib/int-option.ts";
import { startOtlpReceiver } from "./lib/otlp-receiver.ts";
import { newProgram, parseOrExit } from "./lib/parse-options.ts";
import { formatSpanTree, type ReceivedSpan } from "./lib/span-tree.ts";

const program = newProgram("npm run otel-dev --")
  .description(
    "An OTLP/HTTP trace receiver (protobuf and JSON) that prints each swarm's span tree when it ends. Point a stack at it: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 npm start.",
  )
  .option("--port <port>", "the port on 127.0.0.1 (0-65,535; 0: any free port)", "4318")
  .option("--quiet <ms>", "print a trace this long after its last span arrived (0-60,000)", "1500");
parseOrExit(program);
const values = program.opts<{ port: string; quiet: string }>();
const port = readIntOption("port", values.port, 0, 65_535);
/** A trace is printed this long after its last span arrived (lanes flush when they end). */
const quietMs = readIntOption("quiet", values.quiet, 0, 60_000);

const byTrace = new Map<string, { spans: ReceivedSpan[]; timer: ReturnType<typeof setTimeout> | null }>();

const receiver = await startOtlpReceiver({
  port,
  onSpans(spans) {
    for (const span of spans) {
      const trace = byTrace.get(span.traceId) ?? { spans: [], timer: null };
      trace.spans.push(span);
      byTrace.set(span.traceId, trace);
    }
    for (const traceId of new Set(spans.map((span) => span.traceId))) {
      const trace = byTrace.get(traceId);
      if (trace === undefined) continue;
      if (trace.timer !== null) clearTimeout(trace.timer);
      // Printed once its root has come (the swarm ended), and again if late spans follow.
      if (!trace.spans.some((span) => span.parentSpanId === null)) continue;
      trace.timer = setTimeout(() => {
        trace.timer = null;
        const root = trace.spans.find((span) => span.parentSpanId === null);
        console.log(`\n── trace ${traceId} · swarm ${String(root?.attributes["edgeswarm.swarm_id"] ?? "?")} · ${trace.spans.length} spans`);
        console.log(formatSpanTree(trace.spans));
      }, quietMs);
    }
  },
});

console.log(`otel-dev: receiving OTLP/HTTP traces (protobuf and JSON) at ${receiver.url}/v1/traces
Start the stack with:  OTEL_EXPORTER_OTLP_ENDPOINT=${receiver.url} npm start
Each swarm's span tree is printed when it ends. Ctrl-C stops.`);

const stop = async (): Promise<void> => {
  await receiver.close();
  process.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
