// A control plane killed mid-deploy (its start check under way) or mid-delete (waiting for the
// hosts) left the version's bundle under RUNLET_HOME/bundles for good: seen with `runlet start`,
// a 5 MiB app's bundle still there after the control plane's restart, its app never deployed.
// Here the deploy and the delete hang where the kill caught them (the hosts never answer), and
// the next start is `dropStrayBundles` over the same database and folder.
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { fileBundles } from "./bundles-file.ts";
import type { RuntimeHosts } from "./host-client.ts";
import { dropStrayBundles } from "./stray-bundles.ts";
import { bundleFiles, noRuntimeHosts } from "./testing/fixture.ts";
import { libsqlFixture } from "./testing/libsql.ts";

/** Apps whose start check or removal never ends: the control plane was killed there. */
const stuck = new Set<string>();
const never = new Promise<never>(() => {});
const hosts: RuntimeHosts = {
  ...noRuntimeHosts,
  start: (input) => (stuck.has(input.app) ? never : noRuntimeHosts.start(input)),
  remove: (target) => (stuck.has(target.app) ? never : Promise.resolve()),
};

let dir: string;
let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "runlet-stray-bundles-"));
  f = await libsqlFixture({ hosts, bundles: fileBundles(dir) });
});
afterAll(async () => {
  await f.cleanup();
  await rm(dir, { recursive: true, force: true });
});

const deploy = (name: string, text = "1") =>
  f.call("POST", `/v2/projects/${f.projectId}/apps`, {
    body: {
      files: bundleFiles({
        "runlet.toml": `name = "${name}"`,
        "main.mjs": `export const run = () => ${text};`,
      }),
    },
  });

/** The bundle files of `app`, by name. */
const filesOf = (app: string) => readdir(join(dir, f.projectId, app)).catch(() => []);

async function until(done: () => Promise<boolean>) {
  while (!(await done())) await new Promise((resolve) => setTimeout(resolve, 20));
}

it("drops the bundles a cut deploy or delete left, and keeps every recorded version's", async () => {
  // Two apps live: `kept` at v1 and v2, `rolled` at v1, then a deploy of v2 cut in its check.
  for (const text of ["1", "2"]) expect((await deploy("kept", text)).status).toBe(201);
  expect((await deploy("rolled")).status).toBe(201);
  const recorded = { kept: await filesOf("kept"), rolled: await filesOf("rolled") };
  expect(recorded.kept).toHaveLength(2);
  stuck.add("rolled");
  void deploy("rolled", "2");
  await until(async () => (await filesOf("rolled")).length === 2);
  // A new app's first deploy cut the same way: its only bundle, no app row.
  stuck.add("fresh");
  void deploy("fresh");
  await until(async () => (await filesOf("fresh")).length === 1);
  // A delete cut while it waits for the hosts: the app's rows are gone, its bundles not.
  expect((await deploy("doomed")).status).toBe(201);
  stuck.add("doomed");
  void f.call("DELETE", `/v2/projects/${f.projectId}/apps/doomed`);
  await until(
    async () => (await f.call("GET", `/v2/projects/${f.projectId}/apps/doomed`)).status === 404,
  );
  expect(await filesOf("doomed")).toHaveLength(1);
  // What took effect is on the record, and only that: the cut deploys recorded nothing (no
  // version, no app, no entry: they had not taken effect when the kill came; `runlet deploy` was
  // told its connection was cut), the cut delete its entry (its rows were gone).
  const apps = (await (await f.call("GET", `/v2/projects/${f.projectId}/apps`)).json()) as {
    apps: Array<{ name: string; version: number }>;
  };
  expect(apps.apps.map((a) => `${a.name} v${a.version}`).sort()).toEqual(["kept v2", "rolled v1"]);
  const log = (await (await f.call("GET", `/v2/projects/${f.projectId}/audit-log`)).json()) as {
    logs: Array<{ action: string; target: { id: string }; metadata: { version?: number } }>;
  };
  expect(
    log.logs.map((e) => `${e.action} ${e.target.id} v${e.metadata.version}`).toReversed(),
  ).toEqual([
    "apps.deploy kept v1",
    "apps.deploy kept v2",
    "apps.deploy rolled v1",
    "apps.deploy doomed v1",
    "apps.delete doomed v1",
  ]);
  // A file that is no bundle's (not the store's own) stays.
  await writeFile(join(dir, f.projectId, "kept", "notes.txt"), "mine");

  const dropped = await dropStrayBundles(f.db, dir);

  expect(dropped).toHaveLength(3);
  expect(await filesOf("kept")).toEqual([...recorded.kept, "notes.txt"].sort());
  expect(await filesOf("rolled")).toEqual(recorded.rolled);
  expect(await readdir(join(dir, f.projectId))).toEqual(["kept", "rolled"]);
  // The live versions' bundles are still there for the hosts to fetch.
  for (const app of ["kept", "rolled"]) {
    const live = (await (
      await f.call("GET", `/v2/projects/${f.projectId}/apps/${app}`)
    ).json()) as {
      version: number;
      digest: string;
    };
    const key = { project: f.projectId, app, version: live.version, digest: live.digest };
    expect(await fileBundles(dir).get(key), app).toBeDefined();
  }
  // Once more: nothing left to drop.
  expect(await dropStrayBundles(f.db, dir)).toEqual([]);
});
