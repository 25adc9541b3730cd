/**
 * Skill version caches: the survey's reads a few at once (in-order.ts). Results keep item
 * order, at most `width` run at once, a stop keeps the completed prefix, and a failure is
 * thrown only once every started item has finished.
 */
import { mapInOrder } from "../../src/fs/in-order";

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("mapInOrder", () => {
  it("returns every result in item order, with at most `width` in flight", async () => {
    let inFlight = 0;
    let most = 0;
    const results = await mapInOrder([5, 1, 4, 2, 3, 0], 3, async (ms) => {
      most = Math.max(most, ++inFlight);
      await tick(ms);
      inFlight -= 1;
      return ms * 10;
    });
    expect(results).toEqual([50, 10, 40, 20, 30, 0]);
    expect(most).toBe(3);
  });

  it("starts nothing once stopped, and returns the completed prefix", async () => {
    let stopped = false;
    const started: number[] = [];
    const results = await mapInOrder(
      [0, 1, 2, 3, 4, 5],
      2,
      async (i) => {
        started.push(i);
        if (i === 2) stopped = true;
        await tick(1);
        return i;
      },
      () => stopped,
    );
    expect(started).toEqual([0, 1, 2]);
    expect(results).toEqual([0, 1, 2]);
  });

  it("throws the first failure after every started item finished", async () => {
    const finished: number[] = [];
    await expect(
      mapInOrder([0, 1, 2, 3], 2, async (i) => {
        if (i === 0) {
          await tick(20);
          finished.push(i);
          return i;
        }
        if (i === 1) throw new Error("refused");
        return i;
      }),
    ).rejects.toThrow("refused");
    expect(finished).toEqual([0]);
  });
});
