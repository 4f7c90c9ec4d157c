/**
 * A receiver that hangs holds a shard's delivery attempts to it at most ATTEMPTS_PER_TARGET at
 * once (target-gate.ts); the others wait their turn, and attempts to another receiver do not.
 * Attempts time out after 300 ms here, and a "slow" answer comes after 600 ms.
 */
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { ATTEMPTS_PER_TARGET, TargetGate } from "./target-gate.ts";
import {
  deliveryEnded,
  HOOKS,
  newApp,
  newRun,
  receiver,
  shardOfRun,
  startFakes,
} from "./test-support.ts";

beforeAll(startFakes);

describe("delivery attempts to one receiver", () => {
  it("are open at most ATTEMPTS_PER_TARGET at once when it hangs, and all are delivered", async () => {
    const app = newApp(); // every run on shard 0: one shard, one gate
    const runs = Array.from({ length: ATTEMPTS_PER_TARGET + 8 }, () => newRun(app));
    for (const run of runs) receiver(`/${run.runId}`, ["slow", 200]);
    const outcome = { status: "success" as const, result: { ok: 1 }, run_time_ms: 3 };
    await Promise.all(
      runs.map((run) => shardOfRun(run).record(run, outcome, { url: `${HOOKS}/${run.runId}` })),
    );
    const views = await Promise.all(runs.map((run) => deliveryEnded(run, 20_000)));
    expect(views.map((v) => v.webhook?.state)).toEqual(runs.map(() => "delivered"));
    const spans = views.flatMap((v) =>
      (v.webhook?.attempts ?? []).map((a) => [Date.parse(a.at), Date.parse(a.at) + a.duration_ms]),
    ) as Array<[number, number]>;
    expect(spans).toHaveLength(runs.length * 2);
    const openAt = (t: number) => spans.filter(([from, to]) => from <= t && t < to).length;
    expect(Math.max(...spans.map(([from]) => openAt(from)))).toBeLessThanOrEqual(
      ATTEMPTS_PER_TARGET,
    );
    expect(Number(env.WEBHOOK_TIMEOUT_MS)).toBeGreaterThan(0);
  });
});

describe("TargetGate", () => {
  it("lets `limit` in per origin, the next in turn as one leaves, other origins at once", async () => {
    const gate = new TargetGate(2);
    const a1 = await gate.enter("http://a.test/x");
    await gate.enter("http://a.test/y?q=1");
    const order: string[] = [];
    const third = gate.enter("http://a.test/z").then((leave) => {
      order.push("a3");
      return leave;
    });
    void gate.enter("http://a.test/w").then(() => order.push("a4"));
    await gate.enter("http://b.test/x");
    order.push("b1");
    expect(gate.load("http://a.test/")).toEqual({ open: 2, waiting: 2 });
    a1();
    a1(); // a second release of the same place does nothing
    (await third)();
    await new Promise((resolve) => setTimeout(resolve, 0)); // the waiters' continuations run
    expect(order).toEqual(["b1", "a3", "a4"]);
    expect(gate.load("http://a.test/")).toEqual({ open: 2, waiting: 0 });
  });
});
