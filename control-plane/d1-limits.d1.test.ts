// The control plane on D1 with D1's limit of 100 parameters a statement held (testing/strict-d1.ts),
// where one request names many projects or people at once: a host running apps of many projects,
// the runs index's batch of a host's runs, an app deployed by many. workerd's local D1 takes any
// number, so only this shows what production would refuse.
import { env } from "cloudflare:test";
import { inArray } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { beforeAll, expect, it } from "vitest";
import { newId } from "../common/ids.ts";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { recordHeartbeat } from "./hosts/heartbeat.ts";
import { registerHost } from "./hosts/registry.ts";
import { createHostToken } from "./hosts/tokens.ts";
import { createFixture, type Fixture, INTERNAL_TOKEN } from "./testing/fixture.ts";
import { strictD1 } from "./testing/strict-d1.ts";

const MANY = 150;
let db: Database;
let f: Fixture;
/** One app `a` deployed in each of MANY projects. */
const projects: string[] = [];

beforeAll(async () => {
  db = drizzle(strictD1(env.DB), { schema }) as unknown as Database;
  f = await createFixture(db);
  const files = [{ path: "runlet.toml", contentBase64: btoa('name = "a"\nruntime = "managed"\n') }];
  files.push({ path: "main.mjs", contentBase64: btoa("export const run = () => 1;\n") });
  for (let i = 0; i < MANY; i++) {
    const id = await f.addProject();
    const res = await f.call("POST", `/v2/projects/${id}/apps`, { body: { files } });
    expect(res.status).toBe(201);
    projects.push(id);
  }
}, 60_000);

it("refuses, as D1 does, a statement of more than 100 parameters", async () => {
  const ids = Array.from({ length: 101 }, () => newId("prj"));
  await expect(
    db.select().from(schema.projects).where(inArray(schema.projects.id, ids)),
  ).rejects.toThrow(/at most 100 parameters/);
});

it("answers the heartbeat of a host running apps of 150 projects", async () => {
  const { id: tokenId } = await createHostToken(db, { name: "wide", createdBy: f.owner.id });
  const host = await registerHost(db, tokenId, {
    name: "wide",
    address: "http://wide.test:8790",
    slots: 256,
    memoryMb: 65_536,
  });
  const running = projects.map((project) => ({
    project,
    app: "a",
    version: 1,
    replicas: 1,
    ready: 1,
    busy: 0,
  }));
  const answer = await recordHeartbeat(db, host, {
    state: "up",
    busy: 0,
    queued: 0,
    apps: running,
  });
  expect(answer.gone).toEqual([]);
  expect(answer.current).toHaveLength(MANY);
});

it("records a batch of runs of 150 projects in the runs index", async () => {
  const runs = projects.map((projectId) => ({
    id: newId("run"),
    projectId,
    app: "a",
    function: "run",
    async: true,
    status: "success",
    createdAt: Date.now(),
  }));
  const res = await f.call("POST", "/internal/runs", {
    token: INTERNAL_TOKEN,
    body: { runs },
  });
  expect(await res.json()).toEqual({ recorded: MANY, skipped: 0 });
});

it("lists the versions of an app deployed by 150 people", async () => {
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, {
    body: {
      files: [
        { path: "runlet.toml", contentBase64: btoa('name = "b"\nruntime = "managed"\n') },
        { path: "main.mjs", contentBase64: btoa("export const run = () => 1;\n") },
      ],
    },
  });
  const { id: appId } = (await res.json()) as { id: string };
  for (let version = 2; version <= MANY; version++) {
    const deployer = newId("usr");
    await db.batch([
      db.insert(schema.users).values({ id: deployer, name: `u${version}`, createdAt: Date.now() }),
      db.insert(schema.deployments).values({
        id: newId("dep"),
        appId,
        version,
        config: { name: "b", runtime: "managed" },
        files: 2,
        bytes: 60,
        deployedBy: deployer,
        createdAt: Date.now(),
      }),
    ]);
  }
  const versions = await f.call("GET", `/v2/projects/${f.projectId}/apps/b/versions`);
  expect(versions.status).toBe(200);
  const body = (await versions.json()) as { versions: { deployedByName?: string }[] };
  expect(body.versions).toHaveLength(MANY);
});
