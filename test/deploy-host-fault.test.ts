// A deploy's start check when the host, not the app, cannot start the replica (docs/hosts.md, "A
// deploy starts a replica first"): a real control plane on a libSQL file and real runtime hosts
// joined to it, on loopback. A host that could not read the project's secrets answered the
// trial "did not start", and the deploy was refused 422 "the app failed to start: cannot read
// the project's secrets …": its user looked for a bug in an app that had none. Now another host
// is asked, and with none that can the deploy is 503 naming the host's problem.
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { and, eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { appsRoot } from "../common/app-paths.ts";
import { HEADER } from "../common/consts.ts";
import { hostPath } from "../common/protocol/paths.ts";
import { rendezvousOrder } from "../common/rendezvous.ts";
import { secrets } from "../control-plane/db/schema.ts";
import { httpRuntimeHosts } from "../control-plane/host-client.ts";
import { liveHosts } from "../control-plane/hosts/registry.ts";
import { createHostToken } from "../control-plane/hosts/tokens.ts";
import { serveControlPlane } from "../control-plane/listen.ts";
import { INTERNAL_TOKEN, memoryBundles } from "../control-plane/testing/fixture.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import type { RunningHost } from "../runtime-host/server.ts";
import { hostClient, newHome, removeHome, startTestHost } from "../runtime-host/test-support.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let controlPlane: Server;
let controlPlaneUrl: string;
const servers: Server[] = [];
const hosts: RunningHost[] = [];
const homes: string[] = [];

beforeAll(async () => {
  f = await libsqlFixture({
    bundles: memoryBundles(),
    hosts: httpRuntimeHosts(() => liveHosts(f.db), INTERNAL_TOKEN),
  });
  controlPlane = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => controlPlane.once("listening", resolve));
  controlPlaneUrl = `http://127.0.0.1:${(controlPlane.address() as AddressInfo).port}`;
});
// Each case has its own hosts: those of the case before are gone (however it ended).
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});
afterAll(async () => {
  for (const s of [...servers, controlPlane])
    await new Promise<void>((resolve) => s.close(() => resolve()));
  await f.cleanup();
  await Promise.all(homes.map(removeHome));
});

let joined = 0;

/** A runtime host joined to the control plane at `via` (the control plane itself by default). */
async function joinedHost(via = controlPlaneUrl): Promise<RunningHost> {
  // Each its own join token: a live token's name is taken (control-plane/hosts/tokens.ts).
  const name = `h${++joined}`;
  const { token } = await createHostToken(f.db, { name, createdBy: f.owner.id });
  const home = await newHome();
  homes.push(home);
  const host = await startTestHost(home, {
    internalToken: undefined,
    join: { controlPlaneUrl: via, hostToken: () => token, name, slots: 4, memoryMb: 1024 },
  });
  hosts.push(host);
  return host;
}

/**
 * The control plane as one host reaches it over a link that fails for the project's secrets
 * (502): everything else passes through.
 */
async function linkFailingSecrets(): Promise<string> {
  const target = new URL(controlPlaneUrl);
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/internal/secrets/")) {
      req.resume();
      res.writeHead(502, { "content-type": "application/json" }).end('{"message":"bad gateway"}');
      return;
    }
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function deploying(app: string, main: string): Promise<Response> {
  const files = [
    ["runlet.toml", `name = "${app}"\n`],
    ["main.mjs", main],
  ].map(([path, text]) => ({
    path,
    contentBase64: Buffer.from(text as string).toString("base64"),
  }));
  return f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
}

const get = async (path: string) => {
  const res = await f.call("GET", `/v2/projects/${f.projectId}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe("a host that cannot start a deploy's replica for a reason of its own", () => {
  it("is passed over for the next host in the app's order, where the deploy starts", async () => {
    const [broken, sound] = [await joinedHost(await linkFailingSecrets()), await joinedHost()];
    // The app's name puts the host that cannot read the secrets first in its order.
    const ids = [broken.hostId as string, sound.hostId as string];
    let app = "";
    for (let i = 0; i < 100 && !app; i++) {
      const order = rendezvousOrder(
        `${f.projectId}/passed-${i}`,
        ids.map((id) => ({ id })),
      );
      if (order[0]?.id === broken.hostId) app = `passed-${i}`;
    }
    const res = await deploying(app, "export const run = () => 'v1';");
    expect(res.status, await res.clone().text()).toBe(201);
    expect(await res.json()).toMatchObject({ version: 1, started: { host: sound.hostId } });
    const called = await hostClient(sound.url, INTERNAL_TOKEN).invoke(f.projectId, app, "run");
    expect(called.body).toMatchObject({ ok: true, result: "v1" });
    // The host that could not start it keeps nothing of it: no app's folder, no project's.
    expect(existsSync(join(appsRoot(homes[0] as string), f.projectId))).toBe(false);
  });

  it("answers a call or a run it cannot start a replica for 502 elsewhere, so the Worker tries the next host", async () => {
    // The Worker sent such a call to no other host: its caller had the host's 502 while another
    // host could have served it (worker/placement.test.ts: the Worker's side).
    const [broken, sound] = [await joinedHost(await linkFailingSecrets()), await joinedHost()];
    const deployed = await deploying("either", "export const run = () => 'served';");
    expect(deployed.status).toBe(201);
    const answer = await hostClient(broken.url, INTERNAL_TOKEN).invoke(
      f.projectId,
      "either",
      "run",
    );
    expect(answer.status).toBe(502);
    expect(answer.body).toMatchObject({
      message:
        "the runtime host could not start a replica of the app: cannot read the project's secrets: the control plane answered 502 for the project's secrets",
      elsewhere: true,
    });
    const served = await hostClient(sound.url, INTERNAL_TOKEN).invoke(f.projectId, "either", "run");
    expect(served.body).toMatchObject({ ok: true, result: "served" });

    // An async run's hand-over too: it ended failed there, where another host could run it.
    const auth = { authorization: `Bearer ${INTERNAL_TOKEN}` };
    const handedOver = await fetch(broken.url + hostPath.async(f.projectId, "either", "run"), {
      method: "POST",
      headers: {
        ...auth,
        "content-type": "application/json",
        [HEADER.runId]: "run_elsewhere",
        [HEADER.callbackUrl]: "http://127.0.0.1:9/unused",
        [HEADER.waitMs]: "100",
      },
      body: "{}",
    });
    expect(handedOver.status).toBe(502);
    expect(await handedOver.json()).toMatchObject({ elsewhere: true });
    // It keeps nothing of the run: the Worker's shard still holds it, queued.
    const asked = await fetch(broken.url + hostPath.run("run_elsewhere"), { headers: auth });
    expect(asked.status).toBe(404);
  });

  it("refuses the deploy 503 naming the host's problem, not the app's, when no host can", async () => {
    const host = await joinedHost();
    const call = () => hostClient(host.url, INTERNAL_TOKEN).invoke(f.projectId, "kept", "run");
    // Set before version 1 starts: a change of the secrets replaces the replicas that read them.
    for (const name of ["FIRST", "SECOND"]) {
      const put = await f.call("PUT", `/v2/projects/${f.projectId}/secrets/${name}`, {
        body: { value: name },
      });
      expect(put.status).toBe(204);
    }
    expect((await deploying("kept", "export const run = () => 'v1';")).status).toBe(201);
    expect((await call()).body).toMatchObject({ ok: true, result: "v1" });
    // A secret that no longer opens (its sealed value copied from another, in the database: the
    // control plane answers the hosts' reads of the project's secrets 500).
    const [second] = await f.db.select().from(secrets).where(eq(secrets.name, "SECOND"));
    await f.db
      .update(secrets)
      .set({ sealed: second?.sealed as string })
      .where(and(eq(secrets.projectId, f.projectId), eq(secrets.name, "FIRST")));

    const refused = await deploying("kept", "export const run = () => 'v2';");
    expect(refused.status).toBe(503);
    const { message } = (await refused.json()) as { message: string };
    expect(message).toBe(
      `version 2 of 'kept' was not deployed (version 1 still answers): no runtime host could start a replica of it first (${host.hostId}: the runtime host could not start a replica of the app: cannot read the project's secrets: the control plane answered 500 for the project's secrets). Try again once one can (runlet hosts), or deploy without the check (runlet deploy --no-start-check, ?startCheck=false): the version is then made current whether it starts or not`,
    );
    // Nothing recorded, audited as a failure, the version before still answers.
    expect((await get("/apps/kept")).body).toMatchObject({ version: 1 });
    expect(((await get("/apps/kept/versions")).body.versions as unknown[]).length).toBe(1);
    const failures = await get("/audit-log?action=apps.deploy&outcome=failure");
    expect((failures.body.logs as unknown[])[0]).toMatchObject({
      target: { type: "app", id: "kept" },
      metadata: { status: 503, error: message },
    });
    expect((await call()).body).toMatchObject({ ok: true, result: "v1" });
  });

  it("says so when the host cannot write the version's files", async () => {
    const host = await joinedHost();
    // A file where the project's folder must go: the host cannot write there.
    await writeFile(join(appsRoot(homes.at(-1) as string), f.projectId), "");
    const refused = await deploying("unwritten", "export const run = () => 1;");
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { message: string }).message).toContain(
      `no runtime host could start a replica of it first (${host.hostId} answered 500: the runtime host cannot write the version's files (ENOTDIR)). `,
    );
    expect((await get("/apps/unwritten")).status).toBe(404);
  });
});
