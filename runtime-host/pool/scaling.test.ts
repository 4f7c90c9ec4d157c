// `[scaling]` through the real host and real replica processes: max_replicas, replica_concurrency
// with a queue bounded by maxWaiting and queueWaitMs, callers that give up leaving it, bursts of
// sync calls waiting their turn, cooldown to zero, min_replicas kept warm and replaced after a
// crash.

import { afterEach, describe, expect, it } from "vitest";
import { HEADER } from "../../common/consts.ts";
import type { HostLimits } from "../limits.ts";
import type { RunningHost } from "../server.ts";
import {
  configOf,
  eventually,
  hostClient,
  isGone,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
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
const seen = [];
export async function mark({ id, ms }) {
  seen.push(id);
  await new Promise((resolve) => setTimeout(resolve, ms));
  return id;
}
export const marked = () => seen;
let inside = 0;
/** Waits until n calls are inside at once (true), or 5 s (false: they came one at a time). */
export async function together({ n }) {
  inside++;
  for (const end = Date.now() + 5000; inside < n && Date.now() < end; )
    await new Promise((resolve) => setTimeout(resolve, 5));
  const all = inside >= n;
  await new Promise((resolve) => setTimeout(resolve, 20)); // the others see the count too
  inside--;
  return { pid: process.pid, all };
}
export function crash() {
  setImmediate(() => process.exit(7));
  return "bye";
}
`,
};

let home: string;
let host: RunningHost | undefined;

async function hostWith(scaling: Record<string, number>, limits: Partial<HostLimits> = {}) {
  home = await newHome();
  host = await startTestHost(home, { limits: { queueWaitMs: 10_000, ...limits } });
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
  it("runs up to max_replicas at once, queues the next calls, and refuses past maxWaiting", async () => {
    const client = await hostWith(
      { max_replicas: 2, replica_concurrency: 1, cooldown: 60 },
      { maxWaiting: 2 },
    );
    // Two run at once, two wait (maxWaiting), the fifth is refused at once.
    const calls = [1, 2, 3, 4].map(() => slow(client, 400));
    await eventually(client.metrics, (apps) => apps[0]?.queued === 2);
    const refused = await slow(client, 1);
    expect(refused.status).toBe(429);
    expect(String(refused.body.message)).toMatch(/at capacity \(2 replicas × 1 concurrent call,/);
    expect(String(refused.body.message)).toMatch(/queue is full \(2 calls waiting\)/);

    const answers = await Promise.all(calls);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    const pids = new Set(answers.map((a) => a.body.result));
    expect(pids.size).toBe(2); // the queued calls ran on the same two replicas
  });

  it("gives a queued call 429 once it has waited queueWaitMs", async () => {
    const client = await hostWith(
      { max_replicas: 1, replica_concurrency: 1 },
      { queueWaitMs: 150 },
    );
    let busyEnded = false;
    const busy = slow(client, 2_000).finally(() => {
      busyEnded = true;
    });
    await eventually(client.metrics, (apps) => apps[0]?.replicas[0]?.active === 1);
    const waited = await slow(client, 1);
    expect(waited.status).toBe(429);
    expect(String(waited.body.message)).toMatch(/waited 0.15 s for a slot/);
    expect(busyEnded, "refused before the busy call ended").toBe(false);
    expect((await busy).status).toBe(200);
  });

  it("lets 200 sync calls, 25 at a time, all wait their turn on one slot", async () => {
    const client = await hostWith({ max_replicas: 1, replica_concurrency: 1 });
    const statuses: number[] = [];
    let next = 0;
    const caller = async () => {
      while (next < 200) {
        next++;
        statuses.push((await slow(client, 1)).status);
      }
    };
    await Promise.all(Array.from({ length: 25 }, caller));
    expect(statuses).toHaveLength(200);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  });

  it("takes a caller that went away out of the queue: its call never runs", async () => {
    const client = await hostWith({ max_replicas: 1, replica_concurrency: 1 });
    const mark = (id: string, ms: number, signal?: AbortSignal) =>
      fetch(`${host?.url}/internal/invoke/p/app/mark`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: `run_${id}` },
        body: JSON.stringify({ id, ms }),
        signal,
      });
    const holding = mark("holding", 500);
    await eventually(client.metrics, (apps) => apps[0]?.replicas[0]?.active === 1);
    const gaveUp = new AbortController();
    const abandoned = mark("abandoned", 1, gaveUp.signal);
    await eventually(client.metrics, (apps) => apps[0]?.queued === 1);
    gaveUp.abort();
    await expect(abandoned).rejects.toThrow();
    await eventually(client.metrics, (apps) => apps[0]?.queued === 0, 300); // before the slot frees
    expect((await holding).status).toBe(200);
    expect((await client.invoke("p", "app", "marked")).body.result).toEqual(["holding"]);
  });

  it("runs replica_concurrency calls on one replica at once", async () => {
    const client = await hostWith({ max_replicas: 1, replica_concurrency: 3 });
    const answers = await Promise.all(
      [1, 2, 3].map(() => client.invoke("p", "app", "together", JSON.stringify({ n: 3 }))),
    );
    // All three were inside the function at once, in one replica.
    const results = answers.map((a) => a.body.result as { pid: number; all: boolean });
    expect(results).toEqual(Array(3).fill({ pid: results[0]?.pid, all: true }));
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

  it("never runs more than max_replicas across a redeploy: the new version waits for the old one's busy replica", async () => {
    const client = await hostWith({ max_replicas: 1, replica_concurrency: 1 });
    const ended: string[] = [];
    const old = slow(client, 800).then((a) => ended.push(`old ${a.status}`));
    await eventually(
      () => client.metrics(),
      ([app]) => app?.replicas[0]?.active === 1,
    );
    expect(
      (
        await client.deploy(
          "p",
          "app",
          2,
          APP,
          configOf("app", { scaling: { max_replicas: 1, replica_concurrency: 1 } }),
        )
      ).status,
    ).toBe(200);
    const next = client.invoke("p", "app", "pid").then((a) => ended.push(`new ${a.status}`));
    await Promise.all([old, next]);
    // Before, the new version's replica started at once beside the busy one: 2 of 1.
    expect(ended).toEqual(["old 200", "new 200"]);
  });

  it("gives calls already waiting the replicas a redeploy's higher max_replicas allows, and lists the old busy one", async () => {
    const one = { max_replicas: 1, replica_concurrency: 1 };
    const client = await hostWith(one);
    const ended: string[] = [];
    const old = slow(client, 1_500).then(() => ended.push("old"));
    await eventually(
      () => client.metrics(),
      ([app]) => app?.replicas[0]?.active === 1,
    );
    const waiting = [1, 2].map(() => slow(client, 100).then(() => ended.push("waited")));
    await eventually(
      () => client.metrics(),
      ([app]) => app?.queued === 2,
    );
    const more = configOf("app", { scaling: { ...one, max_replicas: 3 } });
    expect((await client.deploy("p", "app", 2, APP, more)).status).toBe(200);
    // The old version's replica, still running its call, is listed beside the new ones.
    const [app] = await client.metrics();
    expect(app?.replicas.some((r) => r.active === 1)).toBe(true);
    await Promise.all([old, ...waiting]);
    // Before, they waited for the old call to end: nothing had given them the new room.
    expect(ended).toEqual(["waited", "waited", "old"]);
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

describe("slots", () => {
  it("makes room for a new app's replica by stopping the one idle the longest, and never refuses a call for it", async () => {
    home = await newHome();
    host = await startTestHost(home, { slots: 2 });
    const client = hostClient(host.url);
    const scaling = { cooldown: 600, max_replicas: 1 };
    for (const app of ["a", "b", "c"])
      await client.deploy("p", app, 1, APP, configOf(app, { scaling }));
    const pidOf = async (app: string) => {
      const res = await client.invoke("p", app, "pid");
      expect(res.status).toBe(200);
      return res.body.result as number;
    };
    const a = await pidOf("a");
    await new Promise((r) => setTimeout(r, 20)); // a idle the longer
    const b = await pidOf("b");
    const c = await pidOf("c"); // the host runs 2: a, idle the longest, makes room
    await waitUntil(() => isGone(a));
    expect(isGone(b)).toBe(false);
    const held = async () =>
      (await client.metrics()).flatMap((s) => s.replicas.map(() => s.app)).sort();
    expect(await held()).toEqual(["b", "c"]);
    expect(await pidOf("c")).toBe(c);

    // Both busy: a's call starts a replica all the same, over the slots, rather than wait.
    const busy = ["b", "c"].map((app) =>
      client.invoke("p", app, "slow", JSON.stringify({ ms: 1_500 })),
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(await pidOf("a")).not.toBe(a);
    expect((await Promise.all(busy)).map((res) => res.status)).toEqual([200, 200]);
  });
});
