// An operator drains a host (docs/hosts.md, "Draining a host"): the Worker's list has it
// draining (no new work), its heartbeats do not undo that, each answer tells it to keep no
// replica of its apps and no new one is granted it, so its places of max_replicas go to the other
// hosts; a resume ends it, and so does its graceful stop (it registers `up` when it starts
// again); a crash and a restart do not. Before, an operator had no way to take work
// off a host short of stopping it.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOWN_AFTER_MS } from "../../common/protocol/hosts.ts";
import { hosts } from "../db/schema.ts";
import { liveHosts } from "../hosts/registry.ts";
import {
  bundleFiles,
  INTERNAL_TOKEN,
  operatorHostToken,
  registerHost,
} from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let token: string;

beforeAll(async () => {
  f = await libsqlFixture();
  ({ token } = await operatorHostToken(f, "racks"));
  const files = bundleFiles({
    "runlet.toml": 'name = "wide"\n[scaling]\nmax_replicas = 2\n',
    "main.mjs": "export const run = () => 1;",
  });
  const deployed = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(deployed.status).toBe(201);
});
afterAll(() => f.cleanup());

const register = (address: string) => registerHost(f, token, address);

/** A heartbeat saying the host is up with `replicas` of "wide": how many it may keep. */
async function keep(hostId: string, replicas: number): Promise<number | undefined> {
  const res = await f.call("POST", `/internal/hosts/${hostId}/heartbeat`, {
    token,
    body: {
      state: "up",
      busy: 0,
      queued: 0,
      apps: [{ project: f.projectId, app: "wide", version: 1, replicas, ready: replicas, busy: 0 }],
    },
  });
  expect(res.status).toBe(200);
  const { current } = (await res.json()) as { current: Array<{ app: string; keep?: number }> };
  return current.find((c) => c.app === "wide")?.keep;
}

const ask = async (hostId: string, have: number) => {
  const res = await f.call("POST", `/internal/hosts/${hostId}/replicas`, {
    token,
    body: { project: f.projectId, app: "wide", version: 1, maxReplicas: 2, have },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { granted: boolean }).granted;
};

const act = (verb: string, hostId: string, t?: string | null) =>
  f.call("POST", `/v2/hosts/${hostId}/${verb}`, t === undefined ? {} : { token: t });

async function states(hostId: string) {
  const operator = (await (await f.call("GET", "/v2/hosts")).json()) as {
    hosts: Array<{ id: string; state: string }>;
  };
  const worker = (await (
    await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN })
  ).json()) as { hosts: Array<{ id: string; state: string }> };
  return {
    operator: operator.hosts.find((h) => h.id === hostId)?.state,
    worker: worker.hosts.find((h) => h.id === hostId)?.state,
    controlPlane: (await liveHosts(f.db)).find((h) => h.id === hostId)?.state,
  };
}

describe("a drained host", () => {
  it("gets no new work and keeps no replica, whatever its heartbeats say; its places go to the others", async () => {
    const a = await register("http://10.6.0.1:8790");
    const b = await register("http://10.6.0.2:8790");
    expect(await keep(a, 2)).toBe(2); // a runs both of max_replicas = 2
    expect(await ask(b, 0)).toBe(false);
    expect((await act("drain", a)).status).toBe(204);
    expect((await act("drain", a)).status).toBe(204); // again: the same
    expect(await states(a)).toEqual({
      operator: "drained",
      worker: "draining",
      controlPlane: "draining",
    });
    // Its heartbeat says `up`: still drained, told to keep none of its two, granted none.
    expect(await keep(a, 2)).toBe(0);
    expect((await states(a)).operator).toBe("drained");
    expect(await ask(a, 0)).toBe(false);
    // Retired (its calls ended): the other host is granted their places.
    expect(await keep(a, 0)).toBe(0);
    expect(await ask(b, 0)).toBe(true);
    expect(await ask(b, 1)).toBe(true);
  });

  it("takes work again once resumed, or once it stopped gracefully and registers again", async () => {
    const id = await register("http://10.6.1.1:8790");
    expect((await act("drain", id)).status).toBe(204);
    expect((await act("resume", id)).status).toBe(204);
    expect(await states(id)).toEqual({ operator: "up", worker: "up", controlPlane: "up" });
    expect((await act("resume", id)).status).toBe(204); // up already: nothing to do
    expect((await act("drain", id)).status).toBe(204);
    const left = await f.call("POST", `/internal/hosts/${id}/leave`, { token });
    expect(left.status).toBe(204);
    expect(await register("http://10.6.1.1:8790")).toBe(id);
    expect((await states(id)).operator).toBe("up");
  });

  it("is draining, not resumed, once it says it is stopping", async () => {
    // Before, a drained host's `draining` heartbeat was kept as `drained`, so a resume during its
    // graceful stop was 204 and listed it `up` to the Worker, new work placed on a host that
    // was going away, until its next heartbeat (2 s) said `draining` again.
    const id = await register("http://10.6.1.4:8790");
    expect((await act("drain", id)).status).toBe(204);
    const beat = await f.call("POST", `/internal/hosts/${id}/heartbeat`, {
      token,
      body: { state: "draining", busy: 1, queued: 0, apps: [] },
    });
    expect(beat.status).toBe(200);
    expect(await states(id)).toEqual({
      operator: "draining",
      worker: "draining",
      controlPlane: "draining",
    });
    const res = await act("resume", id);
    expect(res.status).toBe(409);
    expect(((await res.json()) as { message: string }).message).toBe(
      `host '${id}' is draining: it is stopping, and takes work when it starts again`,
    );
    expect((await states(id)).worker).toBe("draining");
  });

  it("stays drained when it registers again without having stopped (a crash, a restart)", async () => {
    // Before, a drained host that crashed and came back took work at once: an operator who
    // drained a failing host had it back in the rotation at its next crash.
    const id = await register("http://10.6.1.2:8790");
    expect((await act("drain", id)).status).toBe(204);
    expect(await register("http://10.6.1.2:8790")).toBe(id);
    expect(await states(id)).toEqual({
      operator: "drained",
      worker: "draining",
      controlPlane: "draining",
    });
    expect(await ask(id, 0)).toBe(false); // no replica granted
    expect((await act("resume", id)).status).toBe(204);
    expect((await states(id)).worker).toBe("up");
  });

  it("restarted under another join token, is told to wait until its old entry is down, then takes it over, drained", async () => {
    // Drained, SIGKILLed and restarted within 15 s under another live token: the 409 said only
    // "give this host the address…", and the host stopped for good (exit 3).
    const id = await register("http://10.6.1.3:8790");
    expect((await act("drain", id)).status).toBe(204);
    const res = await f.call("POST", "/v2/hosts/tokens", { body: { name: "racks again" } });
    const other = ((await res.json()) as { token: string }).token;
    const again = await f.call("POST", "/internal/hosts", {
      token: other,
      body: { name: "far1", address: "http://10.6.1.3:8790", slots: 8, memoryMb: 4096 },
    });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { message: string }).message).toMatch(
      new RegExp(
        `^http://10\\.6\\.1\\.3:8790 is the address of runtime host '.*' \\(${id}\\), drained, heard from 0 s ago under another join token\\. If it is another machine, give this host the address the Worker reaches it at \\(runlet host --address http://<its address>:<port>\\)\\. If it is this host before a restart, its entry is down in 1[45] s unless it is heard from again, and runlet host tries again until then and takes it over, still drained \\(runlet hosts resume ${id}\\)$`,
      ),
    );
    const silent = Date.now() - DOWN_AFTER_MS - 1_000; // SIGKILLed: no heartbeat since
    await f.db.update(hosts).set({ seenAt: silent }).where(eq(hosts.id, id));
    expect(await registerHost(f, other, "http://10.6.1.3:8790")).toBe(id);
    expect(await states(id)).toEqual({
      operator: "drained",
      worker: "draining",
      controlPlane: "draining",
    });
  });

  it("cannot be a stopped host (409), nor an unknown one (404); a resume of a host not drained is 409", async () => {
    const id = await register("http://10.6.2.1:8790");
    expect((await f.call("POST", `/internal/hosts/${id}/leave`, { token })).status).toBe(204);
    for (const verb of ["drain", "resume"]) {
      const res = await act(verb, id);
      expect(res.status).toBe(409);
      expect(((await res.json()) as { message: string }).message).toContain(`'${id}' is stopped`);
      const unknown = await act(verb, "hst_never");
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ code: "not_found" });
    }
    expect((await states(id)).operator).toBe("stopped");
  });

  it("does not resume a drained host that is down (409, as the docs say); it stays drained", async () => {
    // Before, the resume was 204 and the row said `up`, while the listing said `down`.
    const id = await register("http://10.6.2.2:8790");
    expect((await act("drain", id)).status).toBe(204);
    const silent = Date.now() - DOWN_AFTER_MS - 1_000;
    await f.db.update(hosts).set({ seenAt: silent }).where(eq(hosts.id, id));
    const res = await act("resume", id);
    expect(res.status).toBe(409);
    expect(((await res.json()) as { message: string }).message).toContain(`'${id}' is down`);
    const [row] = await f.db.select({ state: hosts.state }).from(hosts).where(eq(hosts.id, id));
    expect(row?.state).toBe("drained");
  });

  it("is an operator's doing: anyone else is refused, and nothing changes", async () => {
    const id = await register("http://10.6.3.1:8790");
    for (const t of [f.member.token, f.outsider.token])
      expect((await act("drain", id, t)).status).toBe(403);
    expect((await act("drain", id, null)).status).toBe(401);
    expect((await states(id)).operator).toBe("up");
  });
});
