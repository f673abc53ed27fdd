// The batch-wide limiter: never more than `limit` running, first come first served, and a
// failing task frees its slot.
import { describe, expect, it } from "vitest";
import { createLimiter } from "../create-limiter.ts";

/** A task that runs until the test resolves it. */
function gate() {
  let open = (): void => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

describe("createLimiter", () => {
  it("starts queued tasks in the order they were submitted, as slots free up", async () => {
    const limiter = createLimiter(2);
    const started: number[] = [];
    const gates = [0, 1, 2, 3, 4].map(() => gate());
    const runs = gates.map((g, i) =>
      limiter.run(async () => {
        started.push(i);
        await g.opened;
        return i;
      }),
    );
    await Promise.resolve();
    expect(started).toEqual([0, 1]);
    gates[1]?.open();
    await runs[1];
    await Promise.resolve();
    expect(started).toEqual([0, 1, 2]);
    gates[0]?.open();
    await runs[0];
    await Promise.resolve();
    expect(started).toEqual([0, 1, 2, 3]);
    for (const g of gates) g.open();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3, 4]);
  });

  it("frees the slot of a task that rejects, and passes the rejection on", async () => {
    const limiter = createLimiter(1);
    const failing = limiter.run(async () => {
      throw new Error("boom");
    });
    const next = limiter.run(async () => "ran");
    await expect(failing).rejects.toThrow("boom");
    expect(await next).toBe("ran");
  });

  it.each([0, -3, Number.NaN])("treats a limit of %s as 1", async (limit) => {
    const limiter = createLimiter(limit);
    let running = 0;
    let most = 0;
    await Promise.all(
      [1, 2, 3].map(() =>
        limiter.run(async () => {
          running += 1;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 1));
          running -= 1;
        }),
      ),
    );
    expect(most).toBe(1);
  });
});
