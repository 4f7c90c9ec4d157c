// An app version deployed before the control plane kept bundles, in an older checkout's
// RUNLET_HOME after a `git pull`: the control plane takes its files from the home's own runtime
// host (as that host wrote them), so the other hosts can fetch it; without this they could not,
// and answered its calls 404 "not deployed". Files changed since, or not there, are not taken.

import { writeFile } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { eq, inArray } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { digestOfBundle } from "../common/bundle-digest.ts";
import { AppRegistry } from "../runtime-host/apps.ts";
import type { RunningHost } from "../runtime-host/server.ts";
import { hostClient, newHome, removeHome, startTestHost } from "../runtime-host/test-support.ts";
import { apps, deployments } from "./db/schema.ts";
import { createHostToken } from "./hosts/tokens.ts";
import { serveControlPlane } from "./listen.ts";
import { keepOldBundles } from "./old-bundles.ts";
import { INTERNAL_TOKEN, memoryBundles } from "./testing/fixture.ts";
import { libsqlFixture } from "./testing/libsql.ts";

const bundles = memoryBundles();
let f: Awaited<ReturnType<typeof libsqlFixture>>;
let server: Server;
/** The older checkout's RUNLET_HOME, where its own host kept the apps it was handed. */
let home: string;
let hostToken: string;
/** Another host (RUNLET_HOSTS=2, or `runlet host`), which fetches versions from the control plane. */
let other: RunningHost;
let otherHome: string;

beforeAll(async () => {
  f = await libsqlFixture({ bundles });
  server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  home = await newHome();
  otherHome = await newHome();
  ({ token: hostToken } = await createHostToken(f.db, { name: "other", createdBy: f.owner.id }));
  other = await startTestHost(otherHome, {
    internalToken: undefined,
    join: {
      controlPlaneUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      hostToken: () => hostToken,
      name: "other",
      slots: 4,
      memoryMb: 1024,
    },
  });
});

afterAll(async () => {
  await other?.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await f.cleanup();
  await Promise.all([home, otherHome].map(removeHome));
});

const files = (name: string) =>
  [
    [`runlet.toml`, `name = "${name}"\nruntime = "managed"\n`],
    ["main.mjs", "export const run = () => 1;\n"],
    ["bin/tool", "#!/bin/sh\necho hi\n", true],
  ].map(([path, text, executable]) => ({
    path: path as string,
    contentBase64: Buffer.from(text as string).toString("base64"),
    ...(executable ? { executable: true } : {}),
  }));

/** Deployed as an older checkout did: no digest, no bundle kept; its files on the home's host. */
async function deployedBeforeBundles(name: string, onHost = true) {
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, {
    body: { files: files(name) },
  });
  expect(res.status).toBe(201);
  const { version } = (await res.json()) as { version: number };
  await bundles.forget({ project: f.projectId, app: name, version });
  const app = f.db.select({ id: apps.id }).from(apps).where(eq(apps.name, name));
  await f.db.update(deployments).set({ digest: null }).where(inArray(deployments.appId, app));
  if (onHost) {
    const host = await AppRegistry.open(home);
    const config = { name, runtime: "managed" } as never;
    await host.deploy({ project: f.projectId, app: name, version, config, files: files(name) });
  }
}

/** What a host that fetches the app from the control plane gets (its two requests). */
async function fetchedByAnotherHost(name: string) {
  const headers = { authorization: `Bearer ${hostToken}` };
  const base = `/internal/bundles/${f.projectId}/${name}`;
  const current = (await (await f.app.request(base, { headers })).json()) as {
    version: number;
    digest: string | null;
  };
  const res = await f.app.request(`${base}/${current.version}`, { headers });
  const bundle = res.ok ? ((await res.json()) as { files: ReturnType<typeof files> }) : undefined;
  return { digest: current.digest, status: res.status, bundle };
}

it("keeps the files of the home's host for the other hosts, checked against their digest", async () => {
  await deployedBeforeBundles("legacy");
  await deployedBeforeBundles("elsewhere", false); // its host was another machine
  await deployedBeforeBundles("tampered");
  await writeFile(join(home, "host/apps", f.projectId, "tampered/v1/main.mjs"), "changed");
  const call = (name: string) =>
    hostClient(other.url, INTERNAL_TOKEN).invoke(f.projectId, name, "run", "{}");
  expect((await fetchedByAnotherHost("legacy")).status).toBe(404);

  const kept = await keepOldBundles(f.db, bundles, home);
  expect(kept).toEqual([`${f.projectId}/legacy v1`]);
  expect(await call("legacy")).toMatchObject({ status: 200, body: { ok: true, result: 1 } });
  const legacy = await fetchedByAnotherHost("legacy");
  expect(legacy.status).toBe(200);
  expect(legacy.digest).toBe(await digestOfBundle(files("legacy")));
  expect(await digestOfBundle(legacy.bundle?.files ?? [])).toBe(legacy.digest);
  expect(legacy.bundle?.files.find((file) => file.path === "bin/tool")?.executable).toBe(true);
  for (const name of ["elsewhere", "tampered"]) {
    expect(await fetchedByAnotherHost(name)).toMatchObject({ digest: null, status: 404 });
  }
  expect(await keepOldBundles(f.db, bundles, home)).toEqual([]); // once
});
