// `[scaling]` through the real host and real replica processes: max_replicas, replica_concurrency
// with a bounded queue, cooldown to zero, min_replicas kept warm and replaced after a crash.

import { afterEach, describe, expect, it } from "vitest";
import type { RunningHost } from "../server.ts";
import {
  configOf,
  eventually,
  hostClient,
  isGone,
  newHome,
  removeHome,
  startTestHost,
  waitUntil,
} from "../test-support.ts";

const APP = {
  "main.mjs": `
export async function slow({ ms }) {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return process.pid;
}
export function pid() {
  return process.pid;
}
export function crash() {
  setImmediate(() => process.exit(7));
  return "bye";
}
`,
};

let home: string;
let host: RunningHost | undefined;

async function hostWith(scaling: Record<string, number>, queueWaitMs = 10_000) {
  home = await newHome();
  host = await startTestHost(home, { limits: { queueWaitMs } });
  const client = hostClient(host.url);
  const deployed = await client.deploy("p", "app", 1, APP, configOf("app", { scaling }));
  expect(deployed.status).toBe(200);
  return client;
}

afterEach(async () => {
  await host?.close();
  host = undefined;
  await removeHome(home);
});

const slow = (client: ReturnType<typeof hostClient>, ms: number) =>
  client.invoke("p", "app", "slow", JSON.stringify({ ms }));

/** Pids of the app's replicas, as the host reports them. */
async function replicaPids(client: ReturnType<typeof hostClient>): Promise<number[]> {
  const [app] = await client.metrics();
  return (app?.replicas ?? []).map((r) => r.pid).filter((pid): pid is number => pid !== null);
}

describe("scaling", () => {
  it("runs up to max_replicas at once, queues the next calls, and refuses past the queue", async () => {
    const client = await hostWith({ max_replicas: 2, replica_concurrency: 1, cooldown: 60 });
    // Two run at once, two wait (the queue holds as many as can run), the fifth is refused.
    const calls = [1, 2, 3, 4].map(() => slow(client, 400));
    await eventually(client.metrics, (apps) => apps[0]?.queued === 2);
    const refused = await slow(client, 1);
    expect(refused.status).toBe(429);
    expect(String(refused.body.message)).toMatch(/at capacity \(2 replicas × 1 concurrent calls/);

    const answers = await Promise.all(calls);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    const pids = new Set(answers.map((a) => a.body.result));
    expect(pids.size).toBe(2); // the queued calls ran on the same two replicas
  });

  it("gives a queued call 429 once it has waited queueWaitMs", async () => {
    const client = await hostWith({ max_replicas: 1, replica_concurrency: 1 }, 150);
    const busy = slow(client, 1_000);
    await eventually(client.metrics, (apps) => apps[0]?.replicas[0]?.active === 1);
    const started = Date.now();
    const waited = await slow(client, 1);
    expect(waited.status).toBe(429);
    expect(String(waited.body.message)).toMatch(/for 0.15 s/);
    expect(Date.now() - started).toBeLessThan(900); // refused before the busy call ended
    expect((await busy).status).toBe(200);
  });

  it("runs replica_concurrency calls on one replica at once", async () => {
    const client = await hostWith({ max_replicas: 1, replica_concurrency: 3 });
    const started = Date.now();
    const answers = await Promise.all([1, 2, 3].map(() => slow(client, 300)));
    expect(new Set(answers.map((a) => a.body.result)).size).toBe(1);
    expect(Date.now() - started).toBeLessThan(850); // together, not one after another
  });

  it("scales to zero after cooldown, and starts again on the next call", async () => {
    const client = await hostWith({ min_replicas: 0, cooldown: 1 });
    const first = (await client.invoke("p", "app", "pid")).body.result as number;
    expect(await replicaPids(client)).toEqual([first]);
    await waitUntil(() => isGone(first), 4_000);
    expect(await replicaPids(client)).toEqual([]);
    const second = await client.invoke("p", "app", "pid");
    expect(second.status).toBe(200);
    expect(second.body.result).not.toBe(first);
  });

  it("keeps min_replicas warm before any call, past cooldown, and replaces a crashed one", async () => {
    const client = await hostWith({ min_replicas: 1, max_replicas: 2, cooldown: 0 });
    const [warm] = await eventually(
      () => replicaPids(client),
      (pids) => pids.length === 1,
    );
    if (warm === undefined) throw new Error("no warm replica");
    expect((await client.invoke("p", "app", "pid")).body.result).toBe(warm);
    await new Promise((r) => setTimeout(r, 300)); // cooldown 0 would have stopped it
    expect(isGone(warm)).toBe(false);

    expect((await client.invoke("p", "app", "crash")).status).toBe(200);
    await waitUntil(() => isGone(warm));
    const replaced = await eventually(
      () => replicaPids(client),
      (pids) => pids.length === 1 && pids[0] !== warm,
    );
    expect(isGone(replaced[0] as number)).toBe(false);
  });
});
