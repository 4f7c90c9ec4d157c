// A heartbeat's answer that says an app is gone, judged by the control plane before the app was
// deployed again under its name, reaches the host after that deploy's news: the host must keep
// the new app (removing it deleted its files and stopped its replicas until its next call).
// Found reading the heartbeat's protocol against apps' ids. On the real registry, with the
// control plane's answers given by the test. The control plane's stop of a deleted app
// (`DELETE /internal/apps/…`, held up past its 30 s on a slow host) is the same news: it names
// the app deleted, and a later app of the name stays.
import { readFile } from "node:fs/promises";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { HEADER } from "../common/consts.ts";
import { newId } from "../common/ids.ts";
import { hostPath } from "../common/protocol/paths.ts";
import { heartbeatSides } from "./heartbeat.ts";
import { ReplicaPool } from "./pool/pool.ts";
import { FakeReplica, fakeTarget } from "./pool/test-support.ts";
import {
  currentOfApp as currentOf,
  deployOfApp as filesOf,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
  versionsOfApp,
} from "./test-support.ts";

const T = Date.UTC(2026, 10, 26);
const FIRST = newId("app", T);
const SECOND = newId("app", T + 2_000);

let home: string;
let pool: ReplicaPool | undefined;

beforeEach(async () => {
  home = await newHome();
});

afterEach(async () => {
  await pool?.close();
  pool = undefined;
  await removeHome(home);
});

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

it("keeps the app deployed again under a name whose 'gone' was answered before the deploy", async () => {
  const { registry, versions, now, ...made } = await versionsOfApp(home, FIRST);
  pool = made.pool;
  const host = heartbeatSides(versions, pool, { open: true });
  const goneAnswer = { gone: [{ project: "p", app: "a" }], current: [] };
  const code = async () => {
    const deployment = registry.get("p", "a");
    return deployment && (await readFile(`${deployment.dir}/main.mjs`, "utf8"));
  };
  await versions.deployment("p", "a"); // a call of the first app

  // A heartbeat goes; meanwhile the app is deleted and deployed again, and the deploy's news and
  // a call of the new app reach the host before the answer, which says 'gone'.
  host.heartbeat();
  now.current = await currentOf(SECOND);
  versions.setCurrent("p", "a", now.current);
  await versions.deployment("p", "a");
  host.answered(goneAnswer);
  await settle();
  expect((await code()) ?? "removed").toContain(SECOND);

  // A 'gone' answered to a heartbeat sent after that news is of the new app: it goes.
  host.heartbeat();
  host.answered(goneAnswer);
  await settle();
  expect(await code()).toBeUndefined();
});

it("keeps, at a stop naming the deleted app's id, a later app of the name it heard of", async () => {
  const host = await startTestHost(home);
  try {
    const client = hostClient(host.url);
    const send = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
      fetch(`${host.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          "content-type": "application/json",
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const { files } = filesOf(SECOND);
    const files2 = Object.fromEntries(
      files.map((f) => [f.path, Buffer.from(f.contentBase64, "base64").toString()]),
    );
    expect((await client.deploy("p", "a", 1, files2)).status).toBe(200);
    const current = await send("PUT", hostPath.current("p", "a"), {}, await currentOf(SECOND));
    expect(current.status).toBe(204);
    // The stop of the first app, held up, comes after the second app's news: the second stays.
    const late = await send("DELETE", hostPath.app("p", "a"), { [HEADER.appId]: FIRST });
    expect(late.status).toBe(204);
    expect((await client.invoke("p", "a", "run")).body).toMatchObject({ result: SECOND });
    // A stop naming it, or naming none (an older control plane), removes it.
    const stop = await send("DELETE", hostPath.app("p", "a"), { [HEADER.appId]: SECOND });
    expect(stop.status).toBe(204);
    expect((await client.invoke("p", "a", "run")).status).toBe(404);
  } finally {
    await host.close();
  }
});

it("logs once that the control plane is degraded (its disk full), and once that it is no longer", async () => {
  const made = await versionsOfApp(home, FIRST);
  pool = made.pool;
  const host = heartbeatSides(made.versions, pool, { open: true });
  const logged = vi.spyOn(console, "error").mockImplementation(() => {});
  try {
    const degraded = "the control plane's disk is full: this heartbeat is kept in its memory";
    for (let i = 0; i < 3; i++) host.answered({ gone: [], current: [], degraded });
    host.answered({ gone: [], current: [] });
    host.answered({ gone: [], current: [] });
    expect(logged.mock.calls.map((c) => String(c[0]))).toEqual([
      `runtime host: the control plane is degraded: ${degraded}`,
      "runtime host: the control plane writes heartbeats again",
    ]);
  } finally {
    logged.mockRestore();
  }
});

it("replaces the replicas of a project whose secrets changed, as its answer says", async () => {
  const made = await versionsOfApp(home, FIRST);
  const secrets = { revision: 4 };
  const started: FakeReplica[] = [];
  pool = new ReplicaPool(
    (target) => {
      const replica = new FakeReplica({
        ...target,
        secrets: async () => ({ env: {}, ...secrets }),
      });
      started.push(replica);
      return replica;
    },
    { queueWaitMs: 1_000, maxWaiting: 10 },
  );
  const host = heartbeatSides(made.versions, pool, { open: true });
  const target = fakeTarget();
  const call = () => (pool as ReplicaPool).use(target, async (w) => w.secretsRevision);
  expect(await call()).toBe(4);
  host.answered({ gone: [], current: [], secrets: [{ project: "p", revision: 4 }] });
  expect(await call()).toBe(4); // the same replica: nothing changed
  expect(started).toHaveLength(1);
  secrets.revision = 5;
  host.answered({ gone: [], current: [], secrets: [{ project: "p", revision: 5 }] });
  await settle();
  expect(started[0]?.exited).toBe(true);
  expect(await call()).toBe(5);
});
