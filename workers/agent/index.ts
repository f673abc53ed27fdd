// Agent Worker entry: routes each queue batch to its handler. It wires; it does not decide.
// Both task queues (edgeswarm-tasks, and edgeswarm-tasks-long for the long-chain pool) share one handler.
import { createDeadLetterRooms, createTaskDeps } from "./composition.ts";
import { consumeDeadLetters } from "./consume-dead-letters.ts";
import { consumeTasks } from "./consume-tasks.ts";

export { LaneExecutor } from "./lane-executor.ts";

/** The dead-letter queue of a task queue is named after it with this suffix (see wrangler.toml). */
const DEAD_LETTER_SUFFIX = "-dlq";

export default {
  // Nothing is handed to ctx.waitUntil: a message is settled only after its outcome is recorded.
  async queue(batch, env, _ctx): Promise<void> {
    if (batch.queue.endsWith(DEAD_LETTER_SUFFIX)) {
      await consumeDeadLetters(batch, createDeadLetterRooms(env));
      return;
    }
    await consumeTasks(batch, createTaskDeps(env));
  },
} satisfies ExportedHandler<Env>;
