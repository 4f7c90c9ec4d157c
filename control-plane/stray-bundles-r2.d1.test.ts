// A control plane on Workers cut short mid-deploy (its start check under way) or mid-delete
// (waiting for the hosts) left the version's bundles in its R2 bucket for good: nothing swept it,
// as the Node control plane's start does its folder (stray-bundles.test.ts). Here the strays are
// written as such a cut leaves them, beside bundles real deploys recorded in D1, in a bucket of
// this file's own (SWEPT_BUNDLES, vitest.config.ts).
import { createScheduledController, env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/d1";
import { beforeAll, beforeEach, expect, it, vi } from "vitest";
import { r2Bundles } from "./bundles.ts";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { dropStrayR2Bundles, STRAY_AGE_MS, SWEEP_MARK } from "./stray-bundles-r2.ts";
import { bundleFiles, createFixture, type Fixture } from "./testing/fixture.ts";
import worker from "./worker.ts";

const bucket = env.SWEPT_BUNDLES;
let f: Fixture;

beforeAll(async () => {
  const db = drizzle(env.DB, { schema }) as unknown as Database;
  f = await createFixture(db, { bundles: r2Bundles(bucket) });
});

/** Each test starts from an empty bucket (the mark of an earlier sweep included). */
beforeEach(async () => {
  const { objects } = await bucket.list();
  if (objects.length > 0) await bucket.delete(objects.map((o) => o.key));
});

async function deploy(name: string, text = "1") {
  const files = bundleFiles({
    "runlet.toml": `name = "${name}"`,
    "main.mjs": `export const run = () => ${text};`,
  });
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(201);
}

/** Every key of the bucket but the sweep's mark, in order. */
const keys = async () =>
  (await bucket.list()).objects.map((o) => o.key).filter((key) => key !== SWEEP_MARK);

const uploaded = async (key: string) => (await bucket.head(key))?.uploaded.getTime() ?? NaN;

it("drops unrecorded bundles over a day old, and keeps recent ones, recorded ones and other names", async () => {
  const p = f.projectId;
  for (const text of ["1", "2"]) await deploy("kept", text);
  await deploy("other");
  const recorded = await keys();
  expect(recorded).toHaveLength(3);
  const nameOf = (key?: string) => key?.split("/")[2] ?? "";
  const otherV1 = recorded.find((key) => key.startsWith(`${p}/other/`));
  const old = [
    // A deploy of v3 cut in its start check; a delete cut while it waited for the hosts.
    `${p}/kept/v3-00ff.json`,
    `${p}/doomed/v1-aa.json`,
    `${p}/doomed/v2-bb.json`,
    // Another app's recorded name, in this app's folder; this project's app name, elsewhere.
    `${p}/kept/${nameOf(otherV1)}`,
    `${f.outsiderProjectId}/kept/${nameOf(recorded[0])}`,
  ];
  for (const key of old) await bucket.put(key, "{}");
  // Not a bundle's name: nothing the store writes.
  await bucket.put(`${p}/kept/notes.txt`, "mine");
  await new Promise((resolve) => setTimeout(resolve, 20));
  // A deploy under way in another isolate: kept, not yet recorded.
  const recent = `${p}/kept/v4-11ee.json`;
  await bucket.put(recent, "{}");
  const now = (await uploaded(recent)) + STRAY_AGE_MS - 1;
  for (const key of old) expect(now - (await uploaded(key))).toBeGreaterThan(STRAY_AGE_MS);

  const dropped = await dropStrayR2Bundles(f.db, bucket, now);

  expect(dropped.toSorted()).toEqual(old.toSorted());
  expect(await keys()).toEqual([...recorded, `${p}/kept/notes.txt`, recent].sort());
  // Once more: nothing left to drop, until the deploy's bundle is a day old unrecorded.
  expect(await dropStrayR2Bundles(f.db, bucket, now)).toEqual([]);
  expect(await dropStrayR2Bundles(f.db, bucket, now + 2)).toEqual([recent]);
});

/** A day and a minute from now: every object put now is old enough. */
const later = () => Date.now() + STRAY_AGE_MS + 60_000;

it("reads at most `apps` apps' versions a run, and the next run goes on from there", async () => {
  // Two recorded apps take the first run's reads, before the strays' apps.
  for (const name of ["a-0", "a-1"]) await deploy(name);
  const recorded = await keys();
  const strays = ["b-0", "b-1", "b-2"].map((app) => `${f.projectId}/${app}/v1-ab.json`);
  for (const key of strays) await bucket.put(key, "{}");
  const limits = { pages: 10, pageSize: 2, apps: 2 };
  const runs = [];
  for (let i = 0; i < 4; i++) runs.push(await dropStrayR2Bundles(f.db, bucket, later(), limits));
  expect(runs).toEqual([[], strays.slice(0, 2), strays.slice(2), []]);
  expect(await keys()).toEqual(recorded);
  // The whole bucket seen, the mark goes: the next run starts at its first key again.
  expect(await bucket.head(SWEEP_MARK)).toBeNull();
});

it("reads at most `pages` list pages a run, and the next run goes on from there", async () => {
  const project = await f.addProject();
  // Four objects that are no bundles fill the first two runs' one page of two.
  for (let i = 0; i < 4; i++) await bucket.put(`${project}/a/notes-${i}.txt`, "mine");
  const stray = `${project}/b/v1-ab.json`;
  await bucket.put(stray, "{}");
  const limits = { pages: 1, pageSize: 2, apps: 100 };
  const runs = [];
  for (let i = 0; i < 3; i++) runs.push(await dropStrayR2Bundles(f.db, bucket, later(), limits));
  expect(runs).toEqual([[], [], [stray]]);
  expect(await bucket.head(SWEEP_MARK)).toBeNull();
});

it("runs from the control plane Worker's cron, and says what it removed", async () => {
  await deploy("cron-kept");
  const recorded = await keys();
  const stray = `${f.projectId}/cron-gone/v1-ab.json`;
  await bucket.put(stray, "{}");
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  const controller = createScheduledController({ scheduledTime: later(), cron: "0 * * * *" });

  // The handler awaits its whole sweep: no ExecutionContext's waitUntil to wait for.
  await worker.scheduled(controller, { ...env, BUNDLES: bucket });

  expect(await keys()).toEqual(recorded);
  expect(log).toHaveBeenCalledWith(expect.stringContaining(`removed 1 bundle(s)`));
  expect(log).toHaveBeenCalledWith(expect.stringContaining(stray));
  log.mockRestore();
});
