import { describe, expect, it } from "vitest";
import { KeyedQueue } from "./keyed-queue.ts";

const tick = () => new Promise((r) => setTimeout(r, 5));

describe("KeyedQueue", () => {
  it("runs tasks of one key one at a time, in order, and other keys alongside", async () => {
    const queue = new KeyedQueue();
    const events: string[] = [];
    const task = (name: string) => async () => {
      events.push(`${name} start`);
      await tick();
      events.push(`${name} end`);
      return name;
    };
    const results = await Promise.all([
      queue.run("a", task("a1")),
      queue.run("a", task("a2")),
      queue.run("b", task("b1")),
    ]);
    expect(results).toEqual(["a1", "a2", "b1"]);
    expect(events.indexOf("a2 start")).toBeGreaterThan(events.indexOf("a1 end"));
    expect(events.indexOf("b1 start")).toBeLessThan(events.indexOf("a1 end"));
  });

  it("goes on with the next task after one fails, and passes the failure to its caller", async () => {
    const queue = new KeyedQueue();
    const failed = queue.run("a", async () => {
      throw new Error("boom");
    });
    const next = queue.run("a", async () => "after");
    await expect(failed).rejects.toThrow("boom");
    await expect(next).resolves.toBe("after");
  });
});
