// DELETE /v2/projects/{id}/apps/{name}: its rows go with a success entry in one batch, then the
// hosts stop the app (one that cannot be told hears at its next heartbeat) and its bundles go.
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { auditLog } from "../db/schema.ts";
import type { RuntimeHosts } from "../host-client.ts";
import { bundleFiles, memoryBundles, noRuntimeHosts } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

const removed: string[] = [];
let hostDown = false;
const host: RuntimeHosts = {
  start: noRuntimeHosts.start,
  announce: () => Promise.resolve(),
  async remove({ project, app, appId }) {
    if (!hostDown) removed.push(`${project}/${app}`, `id ${appId}`); // an unreachable host is skipped
  },
  runLogs: () => Promise.resolve(undefined),
  replicas: () => Promise.resolve(undefined),
  secretsChanged: async () => {},
  output: async () => ({ replicas: [], unreachable: 0 }),
};

const bundles = memoryBundles();
let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture({ hosts: host, bundles });
});

afterAll(() => f.cleanup());

const bundle = (name: string) => ({
  files: bundleFiles({
    "runlet.toml": `name = "${name}"`,
    "main.mjs": "export const run = () => 1;",
  }),
});

async function deploy(name: string) {
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: bundle(name) });
  expect(res.status).toBe(201);
}

const appPath = (name: string) => `/v2/projects/${f.projectId}/apps/${name}`;

it("stops the app on the host, forgets it, records apps.delete, and then answers 404", async () => {
  await deploy("doomed");
  await deploy("doomed");
  const listed = await f.call("GET", `/v2/projects/${f.projectId}/apps`);
  const { apps } = (await listed.json()) as { apps: { name: string; id: string }[] };
  const res = await f.call("DELETE", appPath("doomed"), { token: f.member.token });
  expect(res.status).toBe(204);
  // It names the app deleted: a host that heard of a later app of the name keeps that one.
  const id = apps.find((a) => a.name === "doomed")?.id;
  expect(id).toMatch(/^app_/);
  expect(removed).toEqual(expect.arrayContaining([`${f.projectId}/doomed`, `id ${id}`]));
  expect((await f.call("GET", appPath("doomed"))).status).toBe(404);
  const [entry] = await f.db
    .select()
    .from(auditLog)
    .where(
      and(
        eq(auditLog.requestId, res.headers.get("x-request-id") ?? ""),
        eq(auditLog.action, "apps.delete"),
      ),
    );
  expect(entry).toMatchObject({ outcome: "success", targetId: "doomed", metadata: { version: 2 } });

  const again = await f.call("DELETE", appPath("doomed"));
  expect(again.status).toBe(404);
  // Deployed again, it starts over at version 1.
  const redeployed = await f.call("POST", `/v2/projects/${f.projectId}/apps`, {
    body: bundle("doomed"),
  });
  expect(((await redeployed.json()) as { version: number }).version).toBe(1);
});

it("deletes the app and its bundles even while a host cannot be told (it hears at its next heartbeat)", async () => {
  await deploy("sturdy");
  expect([...bundles.kept.keys()].some((k) => k.startsWith(`${f.projectId}/sturdy/v1-`))).toBe(
    true,
  );
  hostDown = true;
  try {
    const res = await f.call("DELETE", appPath("sturdy"));
    expect(res.status).toBe(204);
    expect((await f.call("GET", appPath("sturdy"))).status).toBe(404);
    expect([...bundles.kept.keys()].filter((k) => k.includes("/sturdy/"))).toEqual([]);
  } finally {
    hostDown = false;
  }
});

it("refuses callers outside the project (403) and unauthenticated ones (401)", async () => {
  await deploy("guarded");
  expect((await f.call("DELETE", appPath("guarded"), { token: f.outsider.token })).status).toBe(
    403,
  );
  expect((await f.call("DELETE", appPath("guarded"), { token: null })).status).toBe(401);
  expect((await f.call("GET", appPath("guarded"))).status).toBe(200);
});
