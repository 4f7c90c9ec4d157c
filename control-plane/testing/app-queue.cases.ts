/**
 * An app's async queue as users read it: `runs: {queued, running}` on GET …/apps/{name}/replicas
 * and on each app of GET …/apps, counted over the runs index (runs/unfinished.ts: a partial index
 * and a join with the apps) from the reports of the run store's shards, on libSQL and on D1. A
 * burst of ~480 queued runs showed as "11 waiting" (the host's waiting calls) before.
 */
import { eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import type { Database } from "../db/index.ts";
import { hosts } from "../db/schema.ts";
import { createHostToken } from "../hosts/tokens.ts";
import {
  bundleFiles,
  createFixture,
  type Fixture,
  INTERNAL_TOKEN,
  noRuntimeHosts,
} from "./fixture.ts";

export function appQueueCases(open: () => Promise<Database>) {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(await open(), {
      hosts: {
        start: noRuntimeHosts.start,
        announce: () => Promise.resolve(),
        remove: () => Promise.resolve(),
        runLogs: () => Promise.resolve(undefined),
        // The host has 3 calls waiting: not the async queue, which is the run store's.
        replicas: () =>
          Promise.resolve({ starting: 0, idle: 0, busy: 2, queued: 3, byHost: new Map() }),
        secretsChanged: async () => {},
        output: async () => ({ replicas: [], unreachable: 0 }),
      },
    });
  });

  async function deploy(name: string): Promise<number> {
    const files = bundleFiles({
      "runlet.toml": `name = "${name}"\n[scaling]\nmax_replicas = 2`,
      "main.mjs": "export const run = () => 1;",
    });
    const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    expect(res.status).toBe(201);
    const app = await f.call("GET", `/v2/projects/${f.projectId}/apps/${name}`);
    return Date.parse(((await app.json()) as { createdAt: string }).createdAt);
  }

  /** What the shards report to the runs index: `n` runs of `app` in `status`. */
  async function report(
    app: string,
    status: string,
    n: number,
    over: Record<string, unknown> = {},
  ) {
    const ids = Array.from({ length: n }, () => newId("run"));
    const runs = ids.map((id) => ({
      id,
      projectId: f.projectId,
      app,
      function: "run",
      async: true,
      status,
      createdAt: Date.now(),
      ...over,
    }));
    const res = await f.call("POST", "/internal/runs", { token: INTERNAL_TOKEN, body: { runs } });
    expect(res.status).toBe(200);
    return ids;
  }

  const replicasOf = async (app: string) => {
    const res = await f.call("GET", `/v2/projects/${f.projectId}/apps/${app}/replicas`, {
      token: f.member.token,
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { queued: number; runs: { queued: number; running: number } };
  };

  const listed = async () => {
    const res = await f.call("GET", `/v2/projects/${f.projectId}/apps`, { token: f.member.token });
    expect(res.status).toBe(200);
    const { apps } = (await res.json()) as {
      apps: Array<{ name: string; runs: { queued: number; running: number } }>;
    };
    return Object.fromEntries(apps.map((a) => [a.name, a.runs]));
  };

  it("counts an app's async runs queued and running, apart from the host's waiting calls", async () => {
    const createdAt = await deploy("burst");
    await deploy("idle");
    await deploy("other");
    const queued = await report("burst", "queued", 480);
    await report("burst", "running", 2);
    // Not in its queue: ended runs, sync runs, another app's, and an earlier app's of the name.
    await report("burst", "success", 5, { finishedAt: Date.now() });
    await report("burst", "failure", 1, { finishedAt: Date.now(), error: "x" });
    await report("burst", "running", 1, { async: false });
    await report("other", "queued", 7);
    await report("burst", "queued", 4, { createdAt: createdAt - 60_000 });

    const now = await replicasOf("burst");
    expect(now.runs).toEqual({ queued: 480, running: 2 });
    expect(now.queued).toBe(3); // the host's own figure, unchanged
    expect(await listed()).toMatchObject({
      burst: { queued: 480, running: 2 },
      other: { queued: 7, running: 0 },
      idle: { queued: 0, running: 0 },
    });
    expect((await replicasOf("idle")).runs).toEqual({ queued: 0, running: 0 });

    // Runs that start leave the queue; runs that end, or are cancelled, leave the count.
    const started = queued.slice(0, 10);
    const cancelled = queued.slice(10, 15);
    await f.call("POST", "/internal/runs", {
      token: INTERNAL_TOKEN,
      body: {
        runs: [
          ...started.map((id) => ({ id, status: "running" })),
          ...cancelled.map((id) => ({ id, status: "cancelled", finishedAt: Date.now() })),
        ].map((r) => ({
          projectId: f.projectId,
          app: "burst",
          function: "run",
          async: true,
          createdAt: Date.now(),
          ...r,
        })),
      },
    });
    expect((await replicasOf("burst")).runs).toEqual({ queued: 465, running: 12 });
  });

  it("says how many hosts take work, so a queue that waits for one can say why", async () => {
    await deploy("waits");
    await report("waits", "queued", 3);
    const taking = async () =>
      ((await replicasOf("waits")) as unknown as { hostsTakingWork: number }).hostsTakingWork;
    const before = await taking(); // on D1 the other files' hosts share the registry
    const { token } = await createHostToken(f.db, { name: "rack", createdBy: f.owner.id });
    const address = "http://10.9.9.9:8790";
    const body = { name: "rack-1", address, slots: 4, memoryMb: 1024 };
    expect((await f.call("POST", "/internal/hosts", { token, body })).status).toBe(200);
    expect(await taking()).toBe(before + 1);
    await f.db.update(hosts).set({ state: "drained" }).where(eq(hosts.address, address));
    expect(await taking()).toBe(before);
  });

  it("is 404 for an app that is not deployed", async () => {
    const res = await f.call("GET", `/v2/projects/${f.projectId}/apps/nope/replicas`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ message: expect.stringContaining("nope") });
  });
}
