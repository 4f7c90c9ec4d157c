// A host token revoked while one of its hosts' requests is under way (docs/hosts.md, "Host
// tokens"): the request's token was checked as it began, before the revoke; what it writes after
// it must not undo the revoke. A heartbeat written then listed the host `up` again, its replicas
// counted, under a revoked token, until 15 s of silence made it down: the Worker placed work on a
// host that was stopping, and `runlet start` after `runlet hosts revoke` listed two hosts
// 'local-1' up (test/supervisor.test.ts, once, under load). A registration did the same, and a
// replica granted then held a place of the app's max_replicas on the stopped host for 15 s.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INTERNAL_TOKEN, operatorHostToken, registerHost } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
});
afterAll(() => f.cleanup());

const hostToken = (name: string) => operatorHostToken(f, name);

/**
 * POSTs `body` to `path` with `token`, the body held back until `release`: `reading` resolves
 * once the route reads it, after its token check (the middleware) and before its write.
 */
function heldPost(path: string, token: string, body: unknown) {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let read = () => {};
  const reading = new Promise<void>((resolve) => {
    read = resolve;
  });
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        read();
        await released;
        controller.enqueue(new TextEncoder().encode(JSON.stringify(body)));
        controller.close();
      },
    },
    { highWaterMark: 0 }, // pulled once the route reads, not as the request is made
  );
  const answer = Promise.resolve(
    f.app.request(path, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit),
  );
  return { answer, reading, release };
}

async function stateOf(hostId: string) {
  const listed = (await (await f.call("GET", "/v2/hosts")).json()) as {
    hosts: Array<{ id: string; state: string; apps: unknown[] }>;
  };
  const placed = (await (
    await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN })
  ).json()) as { hosts: Array<{ id: string; state: string }> };
  const host = listed.hosts.find((h) => h.id === hostId);
  return {
    listed: host?.state,
    apps: host?.apps,
    placed: placed.hosts.find((h) => h.id === hostId)?.state,
  };
}

const revokedMessage = (name: string, id: string) =>
  `a runtime host needs a valid host token: this one, '${name}' (${id}), was revoked; an operator makes one with 'runlet hosts token --name NAME'`;

describe("a host token revoked during one of its host's requests", () => {
  it("keeps the host stopped: the heartbeat under way is refused (401), its replicas not counted", async () => {
    const { id, token } = await hostToken("beating");
    const hostId = await registerHost(f, token, "http://10.7.0.1:8790");
    const app = { project: f.projectId, app: "one", version: 1, replicas: 1, ready: 1, busy: 0 };
    const beat = heldPost(`/internal/hosts/${hostId}/heartbeat`, token, {
      state: "up",
      busy: 0,
      queued: 0,
      apps: [app],
    });
    await beat.reading;
    expect((await f.call("DELETE", `/v2/hosts/tokens/${id}`)).status).toBe(204);
    beat.release();
    const res = await beat.answer;
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ message: revokedMessage("beating", id) });
    expect(await stateOf(hostId)).toEqual({ listed: "stopped", apps: [], placed: "down" });
  });

  it("keeps the host stopped: the registration under way is refused (401)", async () => {
    const { id, token } = await hostToken("registering");
    const address = "http://10.7.0.2:8790";
    const hostId = await registerHost(f, token, address);
    // Registering again (a heartbeat answered 404 does), at the same address: the same entry.
    const again = heldPost("/internal/hosts", token, {
      name: "registering",
      address,
      slots: 8,
      memoryMb: 4096,
    });
    await again.reading;
    expect((await f.call("DELETE", `/v2/hosts/tokens/${id}`)).status).toBe(204);
    again.release();
    const res = await again.answer;
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ message: revokedMessage("registering", id) });
    expect(await stateOf(hostId)).toEqual({ listed: "stopped", apps: [], placed: "down" });
  });

  it("grants no replica to the host: the app's place stays free for the others", async () => {
    const { id, token } = await hostToken("asking");
    const hostId = await registerHost(f, token, "http://10.7.0.3:8790");
    const other = await hostToken("other");
    const otherId = await registerHost(f, other.token, "http://10.7.0.4:8790");
    const req = { project: f.projectId, app: "placed", version: 1, maxReplicas: 1 };
    const ask = heldPost(`/internal/hosts/${hostId}/replicas`, token, req);
    await ask.reading;
    expect((await f.call("DELETE", `/v2/hosts/tokens/${id}`)).status).toBe(204);
    ask.release();
    const res = await ask.answer;
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ granted: false });
    expect(await stateOf(hostId)).toEqual({ listed: "stopped", apps: [], placed: "down" });
    // The app's one place: the other host's (it was held by the stopped host for 15 s).
    const theirs = await f.call("POST", `/internal/hosts/${otherId}/replicas`, {
      token: other.token,
      body: req,
    });
    expect(await theirs.json()).toMatchObject({ granted: true });
  });
});
