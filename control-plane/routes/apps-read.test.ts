// GET /v2/projects/{id}/apps[/{name}]: what the Worker reads to run and queue an app — its live
// version's scaling and queue settings; and GET /internal/apps, every app, for the Worker's
// wake-up of its run store after a restart.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { RuntimeHosts } from "../host-client.ts";
import { bundleFiles, INTERNAL_TOKEN, noRuntimeHosts } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";
import { dashboardCookie } from "../testing/owner-rows.ts";

const host: RuntimeHosts = {
  start: noRuntimeHosts.start,
  announce: () => Promise.resolve(),
  remove: () => Promise.resolve(),
  runLogs: () => Promise.resolve(undefined),
  replicas: () => Promise.resolve(undefined),
  secretsChanged: async () => {},
  output: async () => ({ replicas: [], unreachable: 0 }),
};

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture({ hosts: host });
});

afterAll(() => f.cleanup());

async function deploy(toml: string) {
  const files = bundleFiles({ "runlet.toml": toml, "main.mjs": "export const run = () => 1;" });
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(201);
}

it("shows the live version's scaling, capacity and queue settings", async () => {
  await deploy(
    'name = "worker"\nqueue_timeout = 600\nstart_timeout = 120\n[scaling]\nmax_replicas = 3\nreplica_concurrency = 4\ncooldown = 20',
  );
  const res = await f.call("GET", `/v2/projects/${f.projectId}/apps/worker`, {
    token: f.member.token,
  });
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({
    name: "worker",
    version: 1,
    scaling: { minReplicas: 0, maxReplicas: 3, replicaConcurrency: 4, capacity: 12, cooldown: 20 },
    responseGracePeriod: 900,
    queueTimeout: 600,
    startTimeout: 120,
  });
  // The dashboard's app page shows it beside the other limits.
  const cookie = await dashboardCookie(f, f.projectId);
  const page = await (
    await f.app.request("/dashboard/apps/worker", { headers: { cookie } })
  ).text();
  expect(page).toMatch(/Start timeout<\/dt>\s*<dd>120 s/);

  await deploy('name = "worker"\n[scaling]\nmax_replicas = 1');
  const list = await f.call("GET", `/v2/projects/${f.projectId}/apps`);
  const { apps } = (await list.json()) as { apps: Array<Record<string, unknown>> };
  expect(apps.find((a) => a.name === "worker")).toMatchObject({
    version: 2,
    scaling: { capacity: 1 },
    queueTimeout: 86_400, // the default: 24 h
    startTimeout: 30, // the default, left out of the config
  });
});

it("refuses a queue_timeout out of bounds with 400 naming it", async () => {
  const files = bundleFiles({
    "runlet.toml": 'name = "late"\nqueue_timeout = 9999999',
    "main.mjs": "export const run = () => 1;",
  });
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { message: string }).message).toContain("queue_timeout");
});

it("refuses a start_timeout out of bounds or not a whole number with 400 naming it and its bound", async () => {
  const refused = async (line: string) => {
    const files = bundleFiles({
      "runlet.toml": `name = "slow"\n${line}`,
      "main.mjs": "export const run = () => 1;",
    });
    const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    return [res.status, ((await res.json()) as { message: string }).message];
  };
  expect(await refused("start_timeout = 3600")).toEqual([
    400,
    "runlet.toml: start_timeout: must be at most 1800",
  ]);
  expect(await refused("start_timeout = 0")).toEqual([
    400,
    "runlet.toml: start_timeout: must be at least 1",
  ]);
  expect(await refused('start_timeout = "2m"')).toEqual([
    400,
    "runlet.toml: start_timeout: must be a number, not a string",
  ]);
});

it("lists every app of every project on /internal/apps, for the internal token only", async () => {
  await deploy('name = "listed"');
  const refused = await f.call("GET", "/internal/apps", { token: "not-the-token" });
  expect(refused.status).toBe(401);
  const res = await f.call("GET", "/internal/apps", { token: INTERNAL_TOKEN });
  expect(res.status).toBe(200);
  const { apps } = (await res.json()) as { apps: Array<{ project: string; app: string }> };
  expect(apps).toEqual(
    expect.arrayContaining([
      { project: f.projectId, app: "listed" },
      { project: f.projectId, app: "worker" },
    ]),
  );
});

it("names the app a mistyped name likely meant, to those who may list the apps", async () => {
  // `runlet run wokrer` (the Worker reads this route) said only that wokrer was not deployed.
  await deploy('name = "worker"');
  const read = (name: string, token?: string) =>
    f.call("GET", `/v2/projects/${f.projectId}/apps/${name}`, { token });
  const typo = await read("wokrer", f.member.token);
  expect(typo.status).toBe(404);
  expect(((await typo.json()) as { message: string }).message).toBe(
    `app 'wokrer' is not deployed in project '${f.projectId}' (did you mean 'worker'?)`,
  );
  // A name near none is said as before; so are the other app routes' 404s.
  const far = await read("payments");
  expect(((await far.json()) as { message: string }).message).toBe(
    `app 'payments' is not deployed in project '${f.projectId}'`,
  );
  for (const path of ["replicas", "versions", "output"]) {
    const res = await f.call("GET", `/v2/projects/${f.projectId}/apps/wokrer/${path}`);
    expect(((await res.json()) as { message: string }).message, path).toContain(
      "(did you mean 'worker'?)",
    );
  }
  // A caller's token may read an app, not list them: it learns no other app's name.
  const made = await f.call("POST", `/v2/projects/${f.projectId}/service-accounts`, {
    body: {
      name: "caller-typo",
      role: "caller",
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    },
  });
  const { token } = (await made.json()) as { token: string };
  const callers = await read("wokrer", token);
  expect(((await callers.json()) as { message: string }).message).toBe(
    `app 'wokrer' is not deployed in project '${f.projectId}'`,
  );
});
