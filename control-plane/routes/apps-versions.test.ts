// GET /v2/projects/{id}/apps/{name}/versions and …/replicas: what the dashboard shows of an app
// beyond its live version — every version and who deployed it, and its replicas now.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ReplicasNow, RuntimeHosts } from "../host-client.ts";
import { recordHeartbeat } from "../hosts/heartbeat.ts";
import { registerHost } from "../hosts/registry.ts";
import { createHostToken } from "../hosts/tokens.ts";
import { bundleFiles, noRuntimeHosts } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let hostAnswer: ReplicasNow | undefined;
const host: RuntimeHosts = {
  start: noRuntimeHosts.start,
  announce: () => Promise.resolve(),
  remove: () => Promise.resolve(),
  runLogs: () => Promise.resolve(undefined),
  replicas: () => Promise.resolve(hostAnswer),
  secretsChanged: async () => {},
  output: async () => ({ replicas: [], unreachable: 0 }),
};

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture({ hosts: host });
});
afterAll(() => f.cleanup());

async function deploy(token: string, body: string) {
  const files = bundleFiles({ "runlet.toml": 'name = "svc"\n', "main.mjs": body });
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { token, body: { files } });
  expect(res.status).toBe(201);
}

it("lists every version newest first, with who deployed it by name", async () => {
  await deploy(f.owner.token, "export const run = () => 1;");
  await deploy(f.member.token, "export const run = () => 22;");
  const res = await f.call("GET", `/v2/projects/${f.projectId}/apps/svc/versions`, {
    token: f.member.token,
  });
  expect(res.status).toBe(200);
  const { versions } = (await res.json()) as {
    versions: Array<{ version: number; deployedBy: { id: string; name: string }; runtime: string }>;
  };
  expect(versions.map((v) => v.version)).toEqual([2, 1]);
  expect(versions.map((v) => v.deployedBy)).toEqual([
    { id: f.member.id, name: f.member.name },
    { id: f.owner.id, name: f.owner.name },
  ]);
  expect(versions[0]?.runtime).toBe("managed");
});

it("shows the replicas the hosts count, each host's as it answers now, and says when no host can be reached", async () => {
  const path = `/v2/projects/${f.projectId}/apps/svc/replicas`;
  const { id: tokenId } = await createHostToken(f.db, { name: "t", createdBy: f.owner.id });
  const beat = async (name: string, replicas: number, busy: number) => {
    const id = await registerHost(f.db, tokenId, {
      name,
      address: `http://10.9.9.${name.slice(-1)}:8790`,
      slots: 8,
      memoryMb: 1024,
    });
    await recordHeartbeat(f.db, id, {
      state: "up",
      busy,
      queued: 0,
      apps: [{ project: f.projectId, app: "svc", version: 2, replicas, ready: replicas, busy }],
    });
    return id;
  };
  // Each heartbeat is up to 2 s old. rack-1's said its replica was idle; asked now, it is busy.
  // rack-2 does not answer: its heartbeat is all there is. rack-3's replica stopped since.
  const [rack1, rack2, rack3] = [
    await beat("rack-1", 1, 0),
    await beat("rack-2", 2, 1),
    await beat("rack-3", 1, 0),
  ];
  hostAnswer = {
    starting: 1,
    idle: 2,
    busy: 3,
    queued: 4,
    byHost: new Map([
      [rack1, { replicas: 1, busy: 1 }],
      [rack3, { replicas: 0, busy: 0 }],
    ]),
  };
  const seen = (await (await f.call("GET", path, { token: f.member.token })).json()) as {
    hosts: unknown[];
  };
  expect(seen).toEqual({
    replicas: { starting: 1, idle: 2, busy: 3 },
    queued: 4,
    runs: { queued: 0, running: 0 }, // the async queue, the run store's: none here
    host: "reachable",
    hostsTakingWork: 3, // the three racks are up
    hosts: expect.arrayContaining([
      { id: rack1, name: "rack-1", state: "up", replicas: 1, busy: 1 },
      { id: rack2, name: "rack-2", state: "up", replicas: 2, busy: 1 },
    ]),
  });
  expect(seen.hosts).toHaveLength(2); // not rack-3
  hostAnswer = undefined;
  const unreachable = await f.call("GET", path, { token: f.member.token });
  expect(unreachable.status).toBe(200);
  expect(await unreachable.json()).toMatchObject({ host: "unreachable", queued: 0 });
});

it("answers 404 for an unknown app and 403 outside the project", async () => {
  for (const tail of ["versions", "replicas"]) {
    const missing = await f.call("GET", `/v2/projects/${f.projectId}/apps/nope/${tail}`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { code: string }).code).toBe("not_found");
    const outsider = await f.call("GET", `/v2/projects/${f.projectId}/apps/svc/${tail}`, {
      token: f.outsider.token,
    });
    expect(outsider.status).toBe(403);
  }
});
