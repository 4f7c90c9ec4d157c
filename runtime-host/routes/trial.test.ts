// A deploy's trial on a real host (`POST /internal/apps/{project}/{app}/trial`): a replica of the
// version starts before it is current. An app whose module fails when it is loaded was made
// current all the same, and every call failed until the next deploy; now the control plane asks
// a host first. Here the host's side: the answer, the version before still serving, nothing of
// a failed version left on disk, and the replica that started used for the version's first call.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appsRoot } from "../../common/app-paths.ts";
import { digestOfBundle } from "../../common/bundle-digest.ts";
import type { ReplicaOutput } from "../../common/protocol/host.ts";
import type { RunningHost } from "../server.ts";
import {
  bundle,
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

const answering = (what: string) => ({
  "main.mjs": `export const run = () => ({ what: ${JSON.stringify(what)}, pid: process.pid });`,
});

describe("a deploy's trial on the runtime host", () => {
  let home: string;
  let host: RunningHost;
  let client: ReturnType<typeof hostClient>;
  const running = async () => {
    const res = await fetch(`${host.url}/internal/apps/p/a/output`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const { replicas } = (await res.json()) as ReplicaOutput;
    return replicas.filter((r) => r.state === "running");
  };
  const appFolder = () => readdir(join(appsRoot(home), "p", "a")).catch(() => []);

  beforeEach(async () => {
    home = await newHome();
    host = await startTestHost(home);
    client = hostClient(host.url);
  });

  afterEach(async () => {
    await host.close();
    await removeHome(home);
  });

  it("starts a replica of a version beside the current one, which its first call then uses", async () => {
    expect((await client.deploy("p", "a", 1, answering("v1"))).status).toBe(200);
    expect((await client.invoke("p", "a", "run")).body).toMatchObject({ result: { what: "v1" } });

    const trial = await client.trial("p", "a", 2, answering("v2"));
    // With the functions its module exports, for the deploy's hint of how to call one.
    expect(trial).toMatchObject({ status: 200, body: { started: true, exports: ["run"] } });
    // Not current yet: calls still get v1.
    expect((await client.invoke("p", "a", "run")).body).toMatchObject({ result: { what: "v1" } });
    const started = (await running()).find((r) => r.version === 2);
    expect(started?.pid).toEqual(expect.any(Number));

    // Made current: its first call runs on the replica the trial started, not on a new one.
    expect((await client.deploy("p", "a", 2, answering("v2"))).status).toBe(200);
    const first = await client.invoke("p", "a", "run");
    expect(first.body).toMatchObject({ result: { what: "v2", pid: started?.pid } });
  });

  it("keeps its answer going while a slow start runs, within the app's start_timeout", async () => {
    await host.close();
    // The host's limit also bounds the start of the replica's process before the app's code
    // loads: 0.5 s was once not enough for it in CI (two files and workerd beside it), and the
    // trial failed there, before the app's own limit could apply.
    host = await startTestHost(home, { limits: { startTimeoutMs: 2_000, trialKeepAliveMs: 200 } });
    // Loads for about 3 s, past the host's limit here: its own start_timeout allows it.
    const slow = {
      "main.mjs": "await new Promise((r) => setTimeout(r, 3_000));\nexport const run = () => 1;",
    };
    const files = bundle(slow);
    const res = await fetch(`${host.url}/internal/apps/p/a/trial`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        version: 1,
        // Far above the 3 s, which a busy machine stretches (5 s was once not enough).
        config: configOf("a", { start_timeout: 30 }),
        files,
        digest: await digestOfBundle(files),
      }),
    });
    const text = await res.text();
    // Spaces while it started (a client's wait for the next bytes never runs out), then the
    // answer, which reads as JSON all the same.
    expect(text).toMatch(/^ +\{/);
    expect(JSON.parse(text)).toMatchObject({ started: true });
  });

  it("tells of the replica a trial holds in its metrics, apart from the app's replicas", async () => {
    // Right after a deploy, `runlet apps show` said "0 idle" while this replica ran.
    expect((await client.trial("p", "held", 1, answering("v1"))).status).toBe(200);
    const apps = await client.metrics();
    const app = apps.find((a: { app: string }) => a.app === "held");
    expect(app).toMatchObject({ project: "p", version: 1, queued: 0, replicas: [], held: 1 });
  });

  it("stops the replica a trial holds when its app is deleted, and its files go", async () => {
    // A deploy, then a delete before any call: the replica of the deleted app's code ran on,
    // held for the app's cooldown (at least 30 s, up to a day), with the project's secrets.
    const trial = await client.trial("p", "a", 1, answering("v1"));
    expect(trial).toMatchObject({ status: 200, body: { started: true } });
    const pid = (await running()).find((r) => r.version === 1)?.pid as number;
    expect(pid).toEqual(expect.any(Number));
    const removed = await fetch(`${host.url}/internal/apps/p/a`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(removed.status).toBe(204);
    await waitUntil(() => isGone(pid), 10_000);
    expect(await eventually(appFolder, (files) => files.length === 0)).toEqual([]);
  });

  it("stops the replica a trial holds of a version that another one replaced before it was used", async () => {
    expect((await client.deploy("p", "a", 1, answering("v1"))).status).toBe(200);
    await client.trial("p", "a", 2, answering("v2"));
    const pid = (await running()).find((r) => r.version === 2)?.pid as number;
    expect(pid).toEqual(expect.any(Number));
    // v2 was never made current here (refused, say, or this host was not told): v3 is.
    await client.trial("p", "a", 3, answering("v3"));
    expect((await client.deploy("p", "a", 3, answering("v3"))).status).toBe(200);
    await waitUntil(() => isGone(pid), 10_000);
    expect((await client.invoke("p", "a", "run")).body).toMatchObject({ result: { what: "v3" } });
    const trialFiles = (files: string[]) => files.filter((f) => f.includes("trial-v2-"));
    expect(trialFiles(await eventually(appFolder, (f) => trialFiles(f).length === 0))).toEqual([]);
  });

  it("stops the replica a trial holds once the control plane says a later version is current", async () => {
    await client.trial("p", "a", 1, answering("v1"));
    const pid = (await running()).find((r) => r.version === 1)?.pid as number;
    expect(pid).toEqual(expect.any(Number));
    const told = await fetch(`${host.url}/internal/apps/p/a/current`, {
      method: "PUT",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ version: 2, digest: "d".repeat(64) }),
    });
    expect(told.status).toBe(204);
    await waitUntil(() => isGone(pid), 10_000);
  });

  it("answers how a version that cannot load failed, and leaves the current one and no file of it", async () => {
    expect((await client.deploy("p", "a", 1, answering("v1"))).status).toBe(200);
    const before = await appFolder();
    const trial = await client.trial("p", "a", 2, {
      "main.mjs": `console.error("loading v2");\nimport "left-pad";\nexport const run = () => 2;`,
    });
    expect(trial.status).toBe(200);
    expect(trial.body).toMatchObject({
      started: false,
      fault: "app",
      message: expect.stringMatching(
        /^the app failed to start: .*Cannot find package 'left-pad' imported from/,
      ),
    });
    expect((await client.invoke("p", "a", "run")).body).toMatchObject({ result: { what: "v1" } });
    expect(await appFolder()).toEqual(before);
  });

  it("quotes the last lines a custom app wrote before it exited", async () => {
    const config = configOf("a", {
      runtime: "custom",
      custom: { entrypoint: ["sh", "start.sh"] },
    });
    const trial = await client.trial(
      "p",
      "a",
      1,
      { "start.sh": "echo starting up\necho 'cannot open config.yaml' >&2\nexit 1\n" },
      config,
    );
    expect(trial.body).toEqual({
      started: false,
      fault: "app",
      message:
        "the app failed to start: its process exited before it was healthy (code 1): cannot open config.yaml",
      output: [
        { stream: "stdout", text: "starting up" },
        { stream: "stderr", text: "cannot open config.yaml" },
      ],
    });
    // An app new to the host leaves no folder behind.
    expect(await appFolder()).toEqual([]);
  });

  it("refuses a bundle whose digest is not the one given, and a config of another app", async () => {
    const bad = await fetch(`${host.url}/internal/apps/p/a/trial`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        version: 1,
        config: configOf("a"),
        files: [{ path: "main.mjs", contentBase64: Buffer.from("1").toString("base64") }],
        digest: "0".repeat(64),
      }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ message: expect.stringMatching(/digest/) });
    const other = await client.trial("p", "a", 1, answering("x"), configOf("b"));
    expect(other).toMatchObject({ status: 400, body: { message: expect.stringMatching(/'b'/) } });
    expect(await appFolder()).toEqual([]);
  });
});
