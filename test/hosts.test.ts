// A runtime host joining a control plane's registry (docs/hosts.md), both real and on loopback
// sockets: it registers with its host token and learns the internal token, heartbeats the apps
// it has warm, stops an app the control plane no longer has, says it is draining as it stops,
// and is refused with a clear error once its token is revoked.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../common/ids.ts";
import { apps } from "../control-plane/db/schema.ts";
import { createHostToken, revokeHostToken } from "../control-plane/hosts/registry.ts";
import { serveControlPlane } from "../control-plane/listen.ts";
import { INTERNAL_TOKEN } from "../control-plane/testing/fixture.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import type { RunningHost } from "../runtime-host/server.ts";
import {
  eventually,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
} from "../runtime-host/test-support.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let server: Server;
let controlPlaneUrl: string;
const homes: string[] = [];

beforeAll(async () => {
  f = await libsqlFixture();
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
  return startTestHost(home, {
    internalToken: undefined,
    join: { controlPlaneUrl, hostToken, name: "test host", slots: 4, memoryMb: 1024 },
  });
}

type Listed = { id: string; state: string; apps: Array<{ app: string; ready: number }> };
async function listed(hostId: string | undefined): Promise<Listed | undefined> {
  const res = await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN });
  const { hosts } = (await res.json()) as { hosts: Listed[] };
  return hosts.find((h) => h.id === hostId);
}

describe("a runtime host that joins the registry", () => {
  it("registers, takes the internal token it was given, heartbeats its warm apps and drains as it stops", async () => {
    const { token } = await createHostToken(f.db, { name: "test", createdBy: f.owner.id });
    const host = await joinedHost(token);
    try {
      expect(host.hostId).toMatch(/^hst_/);
      expect(await listed(host.hostId)).toMatchObject({ state: "up", apps: [] });
      // The control plane's internal token opens the host; no other does.
      const now = Date.now();
      await f.db.insert(apps).values({
        id: newId("app"),
        projectId: f.projectId,
        name: "warm",
        runtime: "managed",
        currentVersion: 1,
        createdAt: now,
        updatedAt: now,
      });
      const client = hostClient(host.url, INTERNAL_TOKEN);
      const main = { "main.mjs": "export const run = () => 'hi';" };
      expect((await client.deploy(f.projectId, "warm", 1, main)).status).toBe(200);
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
      const closing = host.close({ graceful: true });
      await eventually(
        () => listed(host.hostId),
        (h) => h?.state === "draining",
      );
      await closing;
    }
  });

  it("stops an app the control plane does not have (deleted while the host was away)", async () => {
    const { token } = await createHostToken(f.db, { name: "test", createdBy: f.owner.id });
    const host = await joinedHost(token);
    try {
      const client = hostClient(host.url, INTERNAL_TOKEN);
      const main = { "main.mjs": "export const run = () => 1;" };
      expect((await client.deploy(f.projectId, "deleted", 1, main)).status).toBe(200);
      expect((await client.invoke(f.projectId, "deleted", "run", "{}")).status).toBe(200);
      const gone = await eventually(
        () => client.invoke(f.projectId, "deleted", "run", "{}"),
        (a) => a.status === 404,
      );
      expect(gone.body).toMatchObject({ code: "not_found" });
    } finally {
      await host.close();
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
