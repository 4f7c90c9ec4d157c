// A runtime host joining a control plane's registry (docs/hosts.md), both real and on loopback
// sockets: it registers with its host token and learns the internal token, heartbeats the apps
// it has warm, stops an app the control plane no longer has, says it left once it stopped,
// and is refused with a clear error once its token is revoked.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rendezvousOrder } from "../common/rendezvous.ts";
import { httpRuntimeHosts } from "../control-plane/host-client.ts";
import { listHosts, liveHosts } from "../control-plane/hosts/registry.ts";
import { createHostToken, revokeHostToken } from "../control-plane/hosts/tokens.ts";
import { serveControlPlane } from "../control-plane/listen.ts";
import { INTERNAL_TOKEN, memoryBundles } from "../control-plane/testing/fixture.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import type { RunningHost } from "../runtime-host/server.ts";
import {
  configOf,
  eventually,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
} from "../runtime-host/test-support.ts";

/** The control plane tells the registry's hosts of new versions and deletes, unless a test stops it. */
let announcing = true;
let removing = true;
const bundles = memoryBundles();
let f: Awaited<ReturnType<typeof libsqlFixture>>;
let server: Server;
let controlPlaneUrl: string;
const homes: string[] = [];

beforeAll(async () => {
  const hosts = httpRuntimeHosts(() => liveHosts(f.db), INTERNAL_TOKEN);
  f = await libsqlFixture({
    bundles,
    hosts: {
      ...hosts,
      announce: (a) => (announcing ? hosts.announce(a) : Promise.resolve()),
      remove: (a) => (removing ? hosts.remove(a) : Promise.resolve()),
    },
  });
  server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  controlPlaneUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await f.cleanup();
  await Promise.all(homes.map(removeHome));
});

async function joinedHost(hostToken: string): Promise<RunningHost> {
  const home = await newHome();
  homes.push(home);
  // Two live hosts may not share a name (docs/hosts.md).
  return startTestHost(home, {
    internalToken: undefined,
    join: {
      controlPlaneUrl,
      hostToken: () => hostToken,
      name: `test host ${homes.length}`,
      slots: 4,
      memoryMb: 1024,
    },
  });
}

type Listed = { id: string; state: string; apps: Array<{ app: string; ready: number }> };
async function listed(hostId: string | undefined): Promise<Listed | undefined> {
  const res = await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN });
  const { hosts } = (await res.json()) as { hosts: Listed[] };
  return hosts.find((h) => h.id === hostId);
}

describe("a runtime host that joins the registry", () => {
  it("registers, takes the internal token it was given, heartbeats its warm apps and leaves as it stops", async () => {
    const { token } = await createHostToken(f.db, { name: "test", createdBy: f.owner.id });
    const host = await joinedHost(token);
    try {
      expect(host.hostId).toMatch(/^hst_/);
      expect(await listed(host.hostId)).toMatchObject({ state: "up", apps: [] });
      // The control plane's internal token opens the host; no other does.
      await deploy("warm", "export const run = () => 'hi';");
      const client = hostClient(host.url, INTERNAL_TOKEN);
      expect((await client.invoke(f.projectId, "warm", "run", "{}")).body).toMatchObject({
        ok: true,
        result: "hi",
      });
      const wrong = await fetch(`${host.url}/internal/metrics`, {
        headers: { authorization: "Bearer not-the-token" },
      });
      expect(wrong.status).toBe(401);
      const warm = await eventually(
        () => listed(host.hostId),
        (h) => h?.apps.some((a) => a.app === "warm" && a.ready === 1) ?? false,
      );
      expect(warm?.state).toBe("up");
    } finally {
      await host.close({ graceful: true });
    }
    // Stopped gracefully, it said it left: `stopped` (not `down`, as a host that crashed), with no
    // replica; to the Worker, down at once.
    const all = await listHosts(f.db);
    expect(all.find((h) => h.id === host.hostId)).toMatchObject({ state: "stopped", apps: [] });
    expect(await listed(host.hostId)).toMatchObject({ state: "down", apps: [] });
  });

  it("never serves, and stops, an app the control plane does not have (deleted while the host was away)", async () => {
    const { token } = await createHostToken(f.db, { name: "away", createdBy: f.owner.id });
    const host = await joinedHost(token);
    try {
      const client = hostClient(host.url, INTERNAL_TOKEN);
      const main = { "main.mjs": "export const run = () => 1;" };
      const kept = configOf("deleted", { scaling: { min_replicas: 1 } });
      expect((await client.deploy(f.projectId, "deleted", 1, main, kept)).status).toBe(200);
      const refused = await client.invoke(f.projectId, "deleted", "run", "{}");
      expect(refused).toMatchObject({ status: 404, body: { code: "not_found" } });
      // Its warm replica stops once a heartbeat's answer says the app is gone.
      await eventually(
        () => client.metrics(),
        (listed) => !listed.some((a) => a.app === "deleted"),
      );
    } finally {
      await host.close();
    }
  });

  it("is told to stop when its token is revoked while it runs (its next heartbeat is refused)", async () => {
    const made = await createHostToken(f.db, { name: "soon revoked", createdBy: f.owner.id });
    let refused: string | undefined;
    const home = await newHome();
    homes.push(home);
    const host = await startTestHost(home, {
      internalToken: undefined,
      join: {
        controlPlaneUrl,
        hostToken: () => made.token,
        refused: (reason) => {
          refused = reason;
        },
        name: "soon revoked",
        slots: 1,
        memoryMb: 1024,
      },
    });
    try {
      await revokeHostToken(f.db, made.id);
      const reason = await eventually(
        async () => refused,
        (r) => r !== undefined,
        10_000,
      );
      expect(reason).toMatch(/the control plane refused this host: .*valid host token/);
    } finally {
      await host.close();
    }
  });

  it("reads its token at each try to register: one replaced before the control plane answers works", async () => {
    const old = await createHostToken(f.db, { name: "replaced", createdBy: f.owner.id });
    await revokeHostToken(f.db, old.id);
    const fresh = await createHostToken(f.db, { name: "replacing", createdBy: f.owner.id });
    let token = old.token;
    // Not listening yet: the host tries again until it is (as when `runlet start` starts both).
    const late = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
    await new Promise<void>((resolve) => late.once("listening", resolve));
    const { port } = late.address() as AddressInfo;
    await new Promise<void>((resolve) => late.close(() => resolve()));
    const home = await newHome();
    homes.push(home);
    const starting = startTestHost(home, {
      internalToken: undefined,
      join: {
        controlPlaneUrl: `http://127.0.0.1:${port}`,
        hostToken: () => token,
        name: "late",
        slots: 1,
        memoryMb: 1024,
      },
    });
    await new Promise((r) => setTimeout(r, 600)); // a try or two meets a closed port
    token = fresh.token; // what the control plane writes to the file as it starts
    const again = serveControlPlane(f.app, { port, hostname: "127.0.0.1" });
    try {
      const host = await starting;
      expect(host.hostId).toMatch(/^hst_/);
      await host.close();
    } finally {
      await new Promise<void>((resolve) => again.close(() => resolve()));
    }
  });

  it("is refused at start, saying why, once its host token is revoked", async () => {
    const made = await createHostToken(f.db, { name: "revoked", createdBy: f.owner.id });
    await revokeHostToken(f.db, made.id);
    await expect(joinedHost(made.token)).rejects.toThrow(
      /the control plane refused this host: a runtime host needs a valid host token/,
    );
  });
});

/** Deploys `main.mjs` as a new version of `app` through the management API: its answer. */
function deploying(app: string, main: string, toml = "", query = ""): Promise<Response> {
  const files = [
    ["runlet.toml", `name = "${app}"\n${toml}`],
    ["main.mjs", main],
  ].map(([path, text]) => ({
    path,
    contentBase64: Buffer.from(text as string).toString("base64"),
  }));
  return f.call("POST", `/v2/projects/${f.projectId}/apps${query}`, { body: { files } });
}

/** Deploys `main.mjs` as a new version of `app`: its version. */
async function deploy(app: string, main: string, toml = ""): Promise<number> {
  const res = await deploying(app, main, toml);
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { version: number }).version;
}

describe("versions a host fetches from the control plane", () => {
  let host: RunningHost;
  const call = async (app: string) =>
    hostClient(host.url, INTERNAL_TOKEN).invoke(f.projectId, app, "run", "{}");

  beforeAll(async () => {
    const { token } = await createHostToken(f.db, { name: "fetcher", createdBy: f.owner.id });
    host = await joinedHost(token);
  });
  afterAll(() => host.close());

  it("fetches an app at its first call, and a new version as soon as it is deployed", async () => {
    await deploy("fetched", "export const run = () => 'v1';");
    expect((await call("fetched")).body).toMatchObject({ ok: true, result: "v1" });
    await deploy("fetched", "export const run = () => 'v2';");
    expect((await call("fetched")).body).toMatchObject({ ok: true, result: "v2" });
    expect((await call("nowhere")).status).toBe(404);
  });

  it("with max_replicas = 1, serves a redeploy's first call, and the call after its replica crashed", async () => {
    // The registry still counted the replica that was retired (or died) until the host's next
    // heartbeat, and refused the new one's grant: 429 "on other hosts" on a host of its own.
    const solo = (result: string) =>
      `export const run = () => '${result}';\nexport const crash = () => process.exit(3);`;
    const scaling = "[scaling]\nmax_replicas = 1\n";
    await deploy("solo", solo("v1"), scaling);
    expect((await call("solo")).body).toMatchObject({ ok: true, result: "v1" });
    await deploy("solo", solo("v2"), scaling);
    expect((await call("solo")).body).toMatchObject({ ok: true, result: "v2" });
    const crashed = await hostClient(host.url, INTERNAL_TOKEN).invoke(
      f.projectId,
      "solo",
      "crash",
      "{}",
    );
    expect(crashed.status).toBe(502);
    expect((await call("solo")).body).toMatchObject({ ok: true, result: "v2" });
  });

  it("answers the first call of an app kept warm (min_replicas = 1), which starts its warm replica", async () => {
    // The warm replica's grant and the call's are asked for at once: the call waited 30 s
    // and was refused (429) when only the first asker heard the answer.
    await deploy("warm-first", "export const run = () => 'warm';", "[scaling]\nmin_replicas = 1\n");
    expect((await call("warm-first")).body).toMatchObject({ ok: true, result: "warm" });
  });

  it("starts a kept-warm app on deploy, and switches an app it runs to a redeploy, before any call", async () => {
    // Both waited for their first call, which paid the cold start (api.md promised a warm start).
    const on = (app: string, version: number, ready: boolean) =>
      eventually(
        () => hostClient(host.url, INTERNAL_TOKEN).metrics(),
        (listed) =>
          listed.some(
            (a) =>
              a.app === app && a.version === version && (!ready || a.replicas.some((r) => r.ready)),
          ),
      );
    const kept = "[scaling]\nmin_replicas = 1\n";
    await on("prewarmed", await deploy("prewarmed", "export const run = () => 'v1';", kept), true);
    await on("prewarmed", await deploy("prewarmed", "export const run = () => 'v2';", kept), true);
    expect((await call("prewarmed")).body).toMatchObject({ result: "v2" });
    // Without min_replicas: the new version is fetched and the old replica retired at once, so
    // calls already waiting run the new code (its replica starts at the next call).
    await deploy("running", "export const run = () => 'v1';");
    expect((await call("running")).body).toMatchObject({ result: "v1" });
    await on("running", await deploy("running", "export const run = () => 'v2';"), false);
  });

  it("serves an app deployed again under a deleted one's name, not the deleted one's files", async () => {
    await deploy("reborn", "export const run = () => 'old v1';");
    await deploy("reborn", "export const run = () => 'old v2';");
    expect((await call("reborn")).body).toMatchObject({ result: "old v2" });
    removing = false; // the host misses the delete (it was unreachable)
    try {
      expect((await f.call("DELETE", `/v2/projects/${f.projectId}/apps/reborn`)).status).toBe(204);
    } finally {
      removing = true;
    }
    // Version 1 again: by its number alone the host kept serving "old v2", for good.
    expect(await deploy("reborn", "export const run = () => 'new v1';")).toBe(1);
    const answer = await eventually(
      () => call("reborn"),
      (a) => a.body.result === "new v1",
    );
    expect(answer.body).toMatchObject({ ok: true, result: "new v1" });
  });

  it("learns a version it was not told of at its next heartbeat", async () => {
    await deploy("missed", "export const run = () => 'v1';");
    expect((await call("missed")).body).toMatchObject({ result: "v1" });
    announcing = false;
    try {
      await deploy("missed", "export const run = () => 'v2';");
      const answer = await eventually(
        () => call("missed"),
        (a) => a.body.result === "v2",
      );
      expect(answer.body).toMatchObject({ ok: true, result: "v2" });
    } finally {
      announcing = true;
    }
  });

  it("refuses to run a bundle that does not match its digest (502), and runs nothing of it", async () => {
    // Not started first: the host that starts a deploy's replica has its files from the
    // deploy itself, and fetches nothing; this one fetches the bundle at the first call.
    const res = await deploying(
      "tampered",
      "export const run = () => 'genuine';",
      "",
      "?startCheck=false",
    );
    expect(res.status).toBe(201);
    const { version } = (await res.json()) as { version: number };
    const name = `${f.projectId}/tampered/v${version}-`; // v{N}-{digest}
    const key = [...bundles.kept.keys()].find((k) => k.startsWith(name)) as string;
    const stored = JSON.parse(bundles.kept.get(key) as string) as {
      files: Array<{ path: string; contentBase64: string }>;
    };
    for (const file of stored.files)
      if (file.path === "main.mjs")
        file.contentBase64 = Buffer.from("export const run = () => 'forged';").toString("base64");
    bundles.kept.set(key, JSON.stringify(stored));
    const answer = await call("tampered");
    expect(answer.status).toBe(502);
    expect(answer.body).toMatchObject({
      code: "bad_gateway",
      message: expect.stringMatching(/does not match its digest/),
    });
  });
});

describe("min_replicas over all hosts", () => {
  it("starts them on one host, the app's first in rendezvous order that answers", async () => {
    const { token } = await createHostToken(f.db, { name: "warmers", createdBy: f.owner.id });
    const pair = [await joinedHost(token), await joinedHost(token)];
    try {
      await deploy("one-warm", "export const run = () => 1;", "[scaling]\nmin_replicas = 1\n");
      const replicasOf = async (h: RunningHost) =>
        (await hostClient(h.url, INTERNAL_TOKEN).metrics())
          .filter((a) => a.app === "one-warm")
          .reduce((n, a) => n + a.replicas.length, 0);
      const first = rendezvousOrder(
        `${f.projectId}/one-warm`,
        pair.map((h) => ({ id: h.hostId as string, host: h })),
      )[0]?.host as RunningHost;
      expect(
        await eventually(
          () => replicasOf(first),
          (n) => n === 1,
        ),
      ).toBe(1);
      const other = pair.find((h) => h !== first) as RunningHost;
      expect(await replicasOf(other)).toBe(0);
      // That host gone, which the registry does not know yet: the next one warms a redeploy.
      await first.close();
      await deploy("one-warm", "export const run = () => 2;", "[scaling]\nmin_replicas = 1\n");
      expect(
        await eventually(
          () => replicasOf(other),
          (n) => n === 1,
        ),
      ).toBe(1);
    } finally {
      await Promise.all(pair.map((h) => h.close()));
    }
  });
});

describe("max_replicas over all hosts", () => {
  it("never runs more replicas of an app than max_replicas on all hosts together", async () => {
    const { token } = await createHostToken(f.db, { name: "pair", createdBy: f.owner.id });
    const [a, b] = [await joinedHost(token), await joinedHost(token)];
    try {
      const main =
        "export const run = async () => { await new Promise((r) => setTimeout(r, 400)); return 1; };";
      await deploy("capped", main, "[scaling]\nmax_replicas = 2\nreplica_concurrency = 1\n");
      const replicasNow = async () => {
        let n = 0;
        for (const h of [a, b])
          for (const app of await hostClient(h.url, INTERNAL_TOKEN).metrics())
            if (app.app === "capped") n += app.replicas.length;
        return n;
      };
      // Three calls on a first, then three on b: a takes both grants, b has none.
      const onA = [1, 2, 3].map(() =>
        hostClient(a.url, INTERNAL_TOKEN).invoke(f.projectId, "capped", "run", "{}"),
      );
      await eventually(replicasNow, (n) => n === 2);
      const onB = [1, 2, 3].map(() =>
        hostClient(b.url, INTERNAL_TOKEN).invoke(f.projectId, "capped", "run", "{}"),
      );
      let most = 0;
      const sampling = (async () => {
        for (let i = 0; i < 30; i++) {
          most = Math.max(most, await replicasNow());
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const [answersA, answersB] = [await Promise.all(onA), await Promise.all(onB)];
      await sampling;
      expect(most).toBe(2);
      expect(answersA.map((x) => x.status)).toEqual([200, 200, 200]);
      // b could start none: its calls are refused at once as busy, for the Worker to place
      // elsewhere, instead of waiting 30 s for a replica it may not have.
      expect(answersB.map((x) => x.status)).toEqual([429, 429, 429]);
      expect(answersB[0]?.body).toMatchObject({ code: "too_many_requests" });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe("a deploy starts a replica of the version first", () => {
  let host: RunningHost;
  const call = async (app: string) =>
    hostClient(host.url, INTERNAL_TOKEN).invoke(f.projectId, app, "run", "{}");
  const get = async (path: string) => {
    const res = await f.call("GET", `/v2/projects/${f.projectId}${path}`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const bundlesOf = (app: string) =>
    [...bundles.kept.keys()].filter((k) => k.startsWith(`${f.projectId}/${app}/`)).sort();

  beforeAll(async () => {
    const { token } = await createHostToken(f.db, { name: "starter", createdBy: f.owner.id });
    host = await joinedHost(token);
  });
  afterAll(() => host.close());

  it("refuses a version that cannot load (422, quoting why), records nothing of it, and the one before answers", async () => {
    const ok = await deploying("gated", "export const run = () => 'v1';");
    expect(ok.status).toBe(201);
    expect(await ok.json()).toMatchObject({
      version: 1,
      started: { host: host.hostId, ms: expect.any(Number) },
    });
    expect((await call("gated")).body).toMatchObject({ ok: true, result: "v1" });
    const kept = bundlesOf("gated");

    const broken = await deploying(
      "gated",
      'console.error("connecting to the cache");\nimport pad from "left-pad";\nexport const run = () => pad;',
    );
    expect(broken.status).toBe(422);
    const { message } = (await broken.json()) as { message: string };
    expect(message).toMatch(
      /^version 2 of 'gated' was not deployed \(version 1 still answers\): the app failed to start: Cannot find package 'left-pad' imported from/,
    );
    expect((await call("gated")).body).toMatchObject({ ok: true, result: "v1" });
    expect((await get("/apps/gated")).body).toMatchObject({ version: 1 });
    expect(((await get("/apps/gated/versions")).body.versions as unknown[]).length).toBe(1);
    expect(bundlesOf("gated")).toEqual(kept);
    const failures = await get("/audit-log?action=apps.deploy&outcome=failure");
    expect((failures.body.logs as unknown[])[0]).toMatchObject({
      target: { type: "app", id: "gated" },
      metadata: { status: 422, error: message },
    });

    // The next deploy takes version 2, which the refused one never held.
    expect(await deploy("gated", "export const run = () => 'v2';")).toBe(2);
    expect((await call("gated")).body).toMatchObject({ ok: true, result: "v2" });
  });

  it("creates no app whose first version cannot start", async () => {
    const res = await deploying(
      "never",
      "export const run = () => { throw 1 };\nawait import('nope');",
    );
    expect(res.status).toBe(422);
    expect(((await res.json()) as { message: string }).message).toMatch(
      /^version 1 of 'never' was not deployed \(the app was not created\): the app failed to start: /,
    );
    expect((await get("/apps/never")).status).toBe(404);
    expect(bundlesOf("never")).toEqual([]);
  });

  it("serves the version's first call on the replica it started", async () => {
    const main = "export const run = () => process.pid;";
    expect(await deploy("first-call", main)).toBe(1);
    const output = await get("/apps/first-call/output");
    const [started] = output.body.replicas as Array<{ pid: number; state: string }>;
    expect(started).toMatchObject({ state: "running", pid: expect.any(Number) });
    expect((await call("first-call")).body).toMatchObject({ ok: true, result: started?.pid });
    // Kept warm (min_replicas), that replica is its warm one: no second is started.
    expect(await deploy("warm-trial", main, "[scaling]\nmin_replicas = 1\n")).toBe(1);
    const warm = await eventually(
      () => hostClient(host.url, INTERNAL_TOKEN).metrics(),
      (apps) => apps.some((a) => a.app === "warm-trial" && a.replicas.length > 0),
    );
    const [replica] = warm.find((a) => a.app === "warm-trial")?.replicas ?? [];
    const [trial] = (await get("/apps/warm-trial/output")).body.replicas as Array<{ pid: number }>;
    expect(replica?.pid).toBe(trial?.pid);
  });

  it("refuses a deploy when no host is up to start it (503), unless told not to check", async () => {
    const alone = await libsqlFixture({
      bundles,
      hosts: httpRuntimeHosts(() => liveHosts(alone.db), INTERNAL_TOKEN),
    });
    try {
      const files = [
        { path: "runlet.toml", contentBase64: Buffer.from('name = "hostless"').toString("base64") },
        {
          path: "main.mjs",
          contentBase64: Buffer.from("export const run = () => 1;").toString("base64"),
        },
      ];
      const path = `/v2/projects/${alone.projectId}/apps`;
      const refused = await alone.call("POST", path, { body: { files } });
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { message: string }).message).toBe(
        "version 1 of 'hostless' was not deployed (the app was not created): no runtime host is up to start a replica of it first. Try again once one is (runlet hosts), or deploy without the check (runlet deploy --no-start-check, ?startCheck=false): the version is then made current whether it starts or not",
      );
      expect((await alone.call("GET", `${path}/hostless`)).status).toBe(404);
      const unchecked = await alone.call("POST", `${path}?startCheck=false`, { body: { files } });
      expect(unchecked.status).toBe(201);
      expect(await unchecked.json()).toMatchObject({ version: 1, started: null });
    } finally {
      await alone.cleanup();
    }
  });
});
