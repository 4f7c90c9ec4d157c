/**
 * Placement (worker/placement.ts): the hosts the registry lists, ordered per app — warm with
 * room first, each app's own sticky order within a bound on load, then the least loaded — a
 * host that could not be reached passed over, and the Worker's own RUNTIME_HOST_URL when no
 * host is registered.
 */
import { env, fetchMock } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { PlacementHost } from "../common/protocol/hosts.ts";
import type { Env } from "./env.ts";
import { invokeOnHost } from "./host.ts";
import { forwardToHost } from "./host-forward.ts";
import { forgetPlacement, hostsFor, inFlight, isHostAlive, suspect } from "./placement.ts";
import { CONTROL, HOST } from "./routes/test-support.ts";

const workerEnv = env as unknown as Env;

beforeAll(() => {
  fetchMock.activate();
  fetchMock.disableNetConnect();
  // Each host answers its health check, asked before the first call there (host-reach.ts).
  for (const id of ["a", "b", "c", "d", "lone"])
    fetchMock.get(`http://${id}.test`).intercept({ path: "/healthz" }).reply(200, "ok").persist();
  fetchMock.get(HOST).intercept({ path: "/healthz" }).reply(200, "ok").persist();
});
beforeEach(() => forgetPlacement());

function host(id: string, over: Partial<PlacementHost> = {}): PlacementHost {
  return {
    id,
    address: `http://${id}.test`,
    state: "up",
    slots: 10,
    busy: 0,
    queued: 0,
    apps: [],
    ...over,
  };
}

/** The registry answers `hosts` (once). */
function registry(hosts: PlacementHost[]) {
  fetchMock.get(CONTROL).intercept({ path: "/internal/hosts" }).reply(200, { hosts });
}

const order = async (app: string) => (await hostsFor(workerEnv, "prj", app)).map((t) => t.id);

describe("placement", () => {
  it("goes on with the hosts it has while another request fetches them: it never waits on that fetch", async () => {
    registry([host("a")]);
    expect(await order("svc")).toEqual(["a"]);
    await new Promise((r) => setTimeout(r, 1_100)); // the list is a second old: refreshed
    fetchMock
      .get(CONTROL)
      .intercept({ path: "/internal/hosts" })
      .reply(200, { hosts: [host("b")] })
      .delay(300);
    const refreshing = order("svc");
    // It awaited the first request's fetch, a promise of another request: workerd cancels such
    // a wait when the request that began it is gone (500 to the caller).
    expect(await order("svc")).toEqual(["a"]);
    expect(await refreshing).toEqual(["b"]);
    expect(await order("svc")).toEqual(["b"]);
  });

  it("puts a host that has the app warm with room first", async () => {
    const warm = { project: "prj", app: "svc", replicas: 1, ready: 1, busy: 0 };
    registry([host("a"), host("b", { apps: [warm] }), host("c")]);
    expect((await order("svc"))[0]).toBe("b");
  });

  it("keeps each app on its own host (sticky), and spreads different apps over the hosts", async () => {
    const hosts = [host("a"), host("b"), host("c")];
    registry(hosts);
    const firsts = new Map<string, string>();
    for (let i = 0; i < 30; i++) firsts.set(`app${i}`, (await order(`app${i}`))[0] as string);
    expect(new Set(firsts.values()).size).toBe(3);
    for (const [app, first] of firsts) expect((await order(app))[0]).toBe(first);
  });

  it("leaves an app's sticky host once it is much busier than the others", async () => {
    const hosts = [host("a"), host("b"), host("c")];
    registry(hosts);
    const sticky = (await order("svc"))[0] as string;
    forgetPlacement();
    registry(hosts.map((h) => (h.id === sticky ? { ...h, busy: 9 } : h)));
    const now = await order("svc");
    expect(now[0]).not.toBe(sticky);
    expect(now).toContain(sticky); // still tried, last
  });

  it("skips draining and down hosts, and for 5 s a host a call could not reach", async () => {
    registry([
      host("a", { state: "draining" }),
      host("b", { state: "down" }),
      host("c"),
      host("d"),
    ]);
    const first = await order("svc");
    expect(first.sort()).toEqual(["c", "d"]);
    suspect("http://c.test");
    expect(await order("svc")).toEqual(["d"]);
  });

  it("falls back to RUNTIME_HOST_URL when the registry lists no host, or cannot be read", async () => {
    registry([]);
    expect(await hostsFor(workerEnv, "prj", "svc")).toEqual([{ id: null, url: HOST }]);
    forgetPlacement();
    fetchMock.get(CONTROL).intercept({ path: "/internal/hosts" }).reply(503, { message: "x" });
    expect(await hostsFor(workerEnv, "prj", "svc")).toEqual([{ id: null, url: HOST }]);
  });

  it("does not fall back to RUNTIME_HOST_URL where the registry has that host draining (or drained)", async () => {
    registry([host("lone", { address: HOST, state: "draining" })]);
    expect(await hostsFor(workerEnv, "prj", "svc")).toEqual([]);
    // The call is refused at once, saying why: it used to wait on the drained host, then 429.
    const call = invokeOnHost(
      workerEnv,
      { project: "prj", app: "svc", fn: "run", runId: "run_1", concurrency: 1 },
      new ArrayBuffer(2),
    );
    // A 502, in DESIGN.md's closed list of the run API's statuses (which has no 503).
    await expect(call).rejects.toMatchObject({
      status: 502,
      message: expect.stringContaining("no runtime host is up"),
    });
    const request = forwardToHost(
      workerEnv,
      { project: "prj", app: "svc", pathAndQuery: "/", runId: "run_2", concurrency: 1 },
      new Request("http://app.test/"),
    );
    await expect(request).rejects.toMatchObject({
      status: 502,
      message: expect.stringContaining("no runtime host is up"),
    });
    forgetPlacement();
    registry([host("lone", { address: HOST, state: "down" })]);
    expect(await hostsFor(workerEnv, "prj", "svc")).toEqual([{ id: null, url: HOST }]);
  });

  it("says a host is alive, gone, or — the registry unreadable — that it cannot tell", async () => {
    registry([host("a"), host("b", { state: "down" })]);
    expect(await isHostAlive(workerEnv, "a")).toBe(true);
    expect(await isHostAlive(workerEnv, "b")).toBe(false);
    expect(await isHostAlive(workerEnv, "gone")).toBe(false);
    forgetPlacement();
    fetchMock.get(CONTROL).intercept({ path: "/internal/hosts" }).reply(503, { message: "x" });
    expect(await isHostAlive(workerEnv, "a")).toBeUndefined();
  });

  it("counts the calls this isolate has open: a burst spills over before the heartbeats say so", async () => {
    const hosts = [host("a", { slots: 4 }), host("b", { slots: 4 }), host("c", { slots: 4 })];
    registry(hosts);
    const sticky = (await order("svc"))[0] as string;
    const ends = [1, 2, 3].map(() => inFlight(`http://${sticky}.test`, "prj", "other"));
    expect((await order("svc"))[0]).not.toBe(sticky);
    for (const end of ends) end();
    expect((await order("svc"))[0]).toBe(sticky);
  });

  it("spreads a burst of calls that arrive together over the hosts, each counted where it is placed", async () => {
    // Counted only once its host's first health check had answered, every call of a burst was
    // placed as if it were alone: 60 sync calls of an app with max_replicas = 6 all went to one
    // of three hosts, which started all six replicas itself.
    registry(["a", "b", "c"].map((id) => host(id)));
    for (const id of ["a", "b", "c"])
      fetchMock
        .get(`http://${id}.test`)
        .intercept({ path: "/internal/invoke/prj/burst/run", method: "POST" })
        .reply(200, { ok: true, result: id, run_time_ms: 1 })
        .persist();
    const first = await order("burst"); // the list read: no call of the burst waits for it
    const target = { project: "prj", app: "burst", fn: "run", concurrency: 1, capacity: 6 };
    const body = () => new TextEncoder().encode("{}").buffer as ArrayBuffer;
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        invokeOnHost(workerEnv, { ...target, runId: `run_${i}` }, body()),
      ),
    );
    const served = answers.map((a) => a.host.id);
    expect(new Set(served)).toEqual(new Set(["a", "b", "c"]));
    for (const id of ["a", "b", "c"])
      expect(served.filter((s) => s === id).length).toBeLessThanOrEqual(3);
    // Each ended: counted nowhere, so the app's own host comes first again.
    expect(await order("burst")).toEqual(first);
  });

  it("counts a replica's slots by the app's replica_concurrency: one busy call leaves it warm", async () => {
    // The heartbeat's busy counts calls, its ready replicas: 1 call on 1 replica of 64 slots
    // read as full, and the call went to a host without the app, to start a replica cold.
    const svc = { project: "prj", app: "svc", replicas: 1, ready: 1, busy: 1 };
    for (const id of ["a", "b"]) {
      forgetPlacement();
      const others = ["a", "b"].filter((o) => o !== id).map((o) => host(o));
      registry([host(id, { busy: 1, apps: [svc] }), ...others]);
      expect((await hostsFor(workerEnv, "prj", "svc", 64))[0]?.id).toBe(id);
    }
  });

  it("sends a call of an app at its max_replicas, all busy, where its replicas are, not to a host that may not start one", async () => {
    // A host without the app was ranked first: it refused (429, elsewhere), and a custom app's
    // call with a body, sent once, answered 429 instead of waiting for the busy replica.
    const svc = { project: "prj", app: "svc", replicas: 1, ready: 1, busy: 1 };
    registry([host("a"), host("b", { busy: 1, apps: [svc] }), host("c")]);
    expect((await hostsFor(workerEnv, "prj", "svc", 1, 1))[0]?.id).toBe("b");
    // Below the bound, a host without the app comes first: it starts a replica.
    expect((await hostsFor(workerEnv, "prj", "svc", 1, 2))[0]?.id).not.toBe("b");
  });

  it("sends a burst where the app's replicas are free, then where its wait per replica is shortest", async () => {
    // Two replicas on each host (one call each): a burst from this isolate filled the sticky
    // host's queue while the other host's replicas idled, until heartbeats said otherwise.
    const svc = { project: "prj", app: "svc", replicas: 2, ready: 2, busy: 0 };
    registry([host("a", { apps: [svc] }), host("b", { apps: [svc] })]);
    const placed: string[] = [];
    const ends: Array<() => void> = [];
    for (let i = 0; i < 8; i++) {
      const [first] = await hostsFor(workerEnv, "prj", "svc", 1);
      placed.push(first?.id as string);
      ends.push(inFlight(first?.url as string, "prj", "svc"));
    }
    expect(placed.filter((id) => id === "a")).toHaveLength(4);
    expect(placed.filter((id) => id === "b")).toHaveLength(4);
    for (const end of ends) end();
  });

  it.each([
    [429, "cannot start a replica of the app", "too_many_requests"],
    [503, "is stopping and turned the waiting call away", "unavailable"],
    // Its sandbox, the project's secrets or the version's files: the app's code never ran.
    [502, "could not start a replica for its own reasons", "bad_gateway"],
  ])(
    "sends a call to the next host when one answers %i elsewhere (it %s)",
    async (status, _, code) => {
      const [first, second] = ["a", "b"].map((id) => host(id));
      registry([first as PlacementHost, second as PlacementHost]);
      const [x, y] = (await order("svc")) as [string, string];
      const path = "/internal/invoke/prj/svc/run";
      fetchMock
        .get(`http://${x}.test`)
        .intercept({ path, method: "POST" })
        .reply(status, { message: "not here", code, elsewhere: true });
      fetchMock
        .get(`http://${y}.test`)
        .intercept({ path, method: "POST" })
        .reply(200, { ok: true, result: "served", run_time_ms: 1 });
      const target = { project: "prj", app: "svc", fn: "run", runId: "run_x", concurrency: 1 };
      const answer = await invokeOnHost(
        workerEnv,
        target,
        new TextEncoder().encode("{}").buffer as ArrayBuffer,
      );
      expect(answer).toEqual({
        ok: true,
        result: "served",
        run_time_ms: 1,
        host: { id: y, url: `http://${y}.test` },
      });
    },
  );

  it("does not send a call on after a 502 of the app's own (its replica failed to start)", async () => {
    registry([host("a"), host("b")]);
    const [x] = (await order("svc")) as [string, string];
    fetchMock
      .get(`http://${x}.test`)
      .intercept({ path: "/internal/invoke/prj/svc/run", method: "POST" })
      .reply(502, { message: "the app failed to start: boom", code: "bad_gateway" });
    // Nothing is set up for the other host: a call sent there would fail as unmocked.
    const target = { project: "prj", app: "svc", fn: "run", runId: "run_y", concurrency: 1 };
    const call = invokeOnHost(
      workerEnv,
      target,
      new TextEncoder().encode("{}").buffer as ArrayBuffer,
    );
    await expect(call).rejects.toMatchObject({
      status: 502,
      message: "the app failed to start: boom",
    });
  });

  it.each([
    ["GET", undefined],
    ["POST", '{"n":1}'],
  ])(
    "sends a custom app's %s to the next host when one answers 429 elsewhere",
    async (method, body) => {
      // Before, a custom app's request went to the first host only: with two hosts, one holding
      // all the app's replicas, 4 callers of an app of capacity 6 got 429 in 7 answers of 10.
      const [first, second] = ["a", "b"].map((id) => host(id));
      registry([first as PlacementHost, second as PlacementHost]);
      const [x, y] = (await order("web")) as [string, string];
      const path = "/internal/http/prj/web/items";
      const sent: Array<string | undefined> = [];
      fetchMock
        .get(`http://${x}.test`)
        .intercept({ path, method })
        .reply(
          429,
          { message: "not here", code: "too_many_requests", elsewhere: true },
          {
            headers: { "x-runlet-host-error": "1" },
          },
        );
      fetchMock
        .get(`http://${y}.test`)
        .intercept({ path, method })
        .reply(200, (req) => {
          sent.push(req.body ? String(req.body) : undefined);
          return "served";
        });
      const headers = body ? { "content-length": String(body.length) } : undefined;
      const request = new Request("https://api.test/v4/prj/web/items", { method, body, headers });
      const target = {
        project: "prj",
        app: "web",
        pathAndQuery: "/items",
        runId: "run_w",
        concurrency: 1,
      };
      const { answer, host: reached } = await forwardToHost(workerEnv, target, request);
      expect(answer.status).toBe(200);
      expect(await answer.text()).toBe("served");
      expect(reached.id).toBe(y);
      expect(sent).toEqual([body]);
    },
  );

  it("says a custom app was not called when a body read whole before sending broke off", async () => {
    // Two hosts: a body up to 1 MiB is read whole first (to be sent on), so a caller whose
    // upload breaks off fails before any host or app sees the request. The message said "the
    // app's request was cut off too", which sent its reader to the app's logs for nothing.
    registry([host("a"), host("b")]);
    let sent = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return controller.error(new Error("the caller went away"));
        sent = true;
        controller.enqueue(new TextEncoder().encode("x".repeat(1000)));
      },
    });
    const request = new Request("https://api.test/v4/prj/web/up", {
      method: "POST",
      body,
      headers: { "content-length": "2000" },
    });
    const target = {
      project: "prj",
      app: "web",
      pathAndQuery: "/up",
      runId: "run_c",
      concurrency: 1,
    };
    const failure = await forwardToHost(workerEnv, target, request).catch((err: unknown) => err);
    expect(failure).toMatchObject({ status: 400 });
    expect((failure as Error).message).toMatch(/broke off .*: the app was not called/);
  });

  it("names the host a call failed at, for the runs index (a host that died with the call)", async () => {
    registry([host("a")]);
    fetchMock
      .get("http://a.test")
      .intercept({ path: "/internal/invoke/prj/svc/run", method: "POST" })
      .replyWithError(new Error("connection reset"));
    const target = { project: "prj", app: "svc", fn: "run", runId: "run_y", concurrency: 1 };
    const failed = await invokeOnHost(
      workerEnv,
      target,
      new TextEncoder().encode("{}").buffer as ArrayBuffer,
    ).catch((err: unknown) => err);
    expect(failed).toMatchObject({ status: 502, host: { id: "a", url: "http://a.test" } });
  });
});
