import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, inPool, maxOverlap, sleep, sleeper, waitOrCancel } from "./apps.ts";
import { cli, type Json, json, type Runlet } from "./harness.ts";
import { type Receiver, startReceiver } from "./receiver.ts";
import { sharedRunlet } from "./shared-stack.ts";

// Issue 11, "async runs are a durable queue", as a user sees it through a real stack
// (`runlet start`) and a real webhook receiver on loopback. The crash and restart is in
// crash.test.ts.

const ENDED = ["success", "failure", "cancelled"];

describe("async runs are a durable queue", () => {
  let runlet: Runlet;
  let receiver: Receiver;
  let api: ReturnType<typeof client>;

  const hook = (path: string) => `webhookEndpoint=${encodeURIComponent(`${receiver.url}${path}`)}`;
  const bodyOf = (d: { body: string } | undefined): Json => JSON.parse(d?.body ?? "null");

  /** Submits an async run and returns its id (the answer must be 202 {run_id}). */
  async function submitAsync(app: string, input: unknown, path: string) {
    const res = await api.submit(app, input, `async=true&${hook(path)}`);
    const body = await json(res);
    expect({ status: res.status, body }).toEqual({
      status: 202,
      body: { run_id: expect.stringMatching(/^run_/) },
    });
    return body.run_id as string;
  }

  beforeAll(async () => {
    [runlet, receiver] = await Promise.all([sharedRunlet("queue"), startReceiver()]);
    api = client(runlet);
    const scaling = (max: number) => [
      "[scaling]",
      `max_replicas = ${max}`,
      "replica_concurrency = 1",
    ];
    const managed = (name: string) => [`name = "${name}"`, 'runtime = "managed"'];
    await api.deploy(sleeper([...managed("burst"), ...scaling(2)], 50));
    await api.deploy(sleeper([...managed("sync"), ...scaling(1)], 1));
    await api.deploy(sleeper([...managed("lineup"), ...scaling(1)]));
    await api.deploy(sleeper([...managed("expiry"), "queue_timeout = 2", ...scaling(1)]));
    // Runs that wait `ms`, or until cancelled (ctx.signal), which frees the replica at once.
    await api.deploy({
      "runlet.toml": [...managed("backlog"), ...scaling(1), ""].join("\n"),
      "main.mjs": `export async function run(input, ctx) {
  ${waitOrCancel("input?.ms ?? 0")}
  return { ok: true };
}`,
    });
  });

  afterAll(async () => {
    await runlet?.stop();
    await receiver?.close();
  });

  it("takes a burst of 400 async runs: every one accepted, run once, listed once, never more than max_replicas at once", async () => {
    const COUNT = 400;
    const answers = await inPool(COUNT, 40, async () => {
      const res = await api.submit("burst", {}, `async=true&${hook("/burst")}`);
      return { status: res.status, body: await json(res) };
    });
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.filter((s) => s !== 202),
      `not 202: ${JSON.stringify(answers.find((a) => a.status !== 202))}`,
    ).toEqual([]);
    const ids = answers.map((a) => a.body.run_id as string);
    expect(new Set(ids).size).toBe(COUNT);

    // Each run's result comes to the webhook: {start, end} around its sleep, on one clock.
    const deliveries = await receiver.waitFor("/burst", COUNT, 90_000);
    const byRun = new Map<string, Json>();
    for (const d of deliveries) byRun.set(bodyOf(d).run_id, bodyOf(d));
    expect([...byRun.keys()].sort()).toEqual([...ids].sort());
    for (const body of byRun.values()) expect(body).toMatchObject({ status: "success" });
    const intervals = [...byRun.values()].map((b) => b.result as { start: number; end: number });
    expect(maxOverlap(intervals)).toBeLessThanOrEqual(2);
    expect(maxOverlap(intervals)).toBeGreaterThanOrEqual(1);

    // Every run's own state says success (bounded polling).
    const views = await inPool(COUNT, 20, (i) =>
      api.viewWhen("burst", ids[i] as string, (v) => ENDED.includes(v.status), 20_000),
    );
    const notSuccess = views.filter((v) => v.status !== "success");
    expect(notSuccess).toEqual([]);
    for (const v of views) expect(v).toMatchObject({ async: true, function: "run" });

    // The runs index lists each exactly once, success and async (it is reported in batches).
    let listed: Json[] = [];
    const deadline = Date.now() + 30_000;
    for (;;) {
      listed = (await api.index("burst")).filter((r) => ids.includes(r.id));
      if (listed.length >= COUNT && listed.every((r) => r.status === "success")) break;
      if (Date.now() > deadline) break;
      await sleep(500);
    }
    const counts = new Map<string, number>();
    for (const r of listed) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
    expect([...counts.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect(counts.size).toBe(COUNT);
    const odd = listed.filter((r) => r.status !== "success" || r.async !== true);
    expect(odd).toEqual([]);
  }, 150_000);

  it("answers a burst of 200 sync runs on one replica with 200s, none refused", async () => {
    const answers = await inPool(200, 25, async () => {
      const res = await api.submit("sync", {});
      return { status: res.status, body: await json(res) };
    });
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.length, `first refusal: ${JSON.stringify(refused[0])}`).toBe(0);
    for (const a of answers) expect(a.body.result).toMatchObject({ start: expect.any(Number) });
  }, 90_000);

  it("cancels a queued run with DELETE: it never runs, the others do", async () => {
    // Long enough that the second is still queued behind it while it is listed and looked up
    // with the CLI, on a machine busy with other tests.
    const first = await submitAsync("lineup", { ms: 6_000 }, "/lineup/1");
    const second = await submitAsync("lineup", { ms: 300 }, "/lineup/2");
    const third = await submitAsync("lineup", { ms: 300 }, "/lineup/3");
    await api.viewWhen("lineup", first, (v) => v.status === "running");
    expect((await api.view("lineup", third)).status).toBe("queued");
    const cancel = await api.cancel("lineup", third);
    const cancelled = await json(cancel);
    expect({ status: cancel.status, run: cancelled.status }).toEqual({
      status: 200,
      run: "cancelled",
    });
    expect(cancelled).toMatchObject({ run_id: third, async: true });

    // A user sees a queued run with the CLI: in the runs index, and by its id alone.
    let listed: Json | undefined;
    for (const until = Date.now() + 5_000; !listed && Date.now() < until; await sleep(100))
      listed = (await api.index("lineup")).find((r) => r.id === second);
    expect(listed).toMatchObject({ status: "queued", async: true });
    const status = await cli(["status", second], runlet.env);
    expect(status.stdout).toMatch(/status\s+queued/);

    // A fourth run, submitted after the cancel, runs after the others on the one replica: the
    // run ids its process has started show whether the cancelled run ever ran.
    const fourth = await submitAsync("lineup", { ms: 0 }, "/lineup/4");
    const ends = await Promise.all(
      [1, 2, 4].map(async (n) => bodyOf((await receiver.waitFor(`/lineup/${n}`, 1, 30_000))[0])),
    );
    expect(ends.map((e) => e.status)).toEqual(["success", "success", "success"]);
    const seen = ends[2]?.result.seen as string[];
    expect(seen).toEqual(expect.arrayContaining([first, second, fourth]));
    expect(seen).not.toContain(third);

    await sleep(1_000);
    expect(receiver.received("/lineup/3")).toHaveLength(0);
    expect(await api.view("lineup", third)).toMatchObject({ status: "cancelled" });
    const deadline = Date.now() + 15_000;
    let entry: Json | undefined;
    while (entry?.status !== "cancelled" && Date.now() < deadline) {
      entry = (await api.index("lineup")).find((r) => r.id === third);
      if (entry?.status !== "cancelled") await sleep(250);
    }
    expect(entry).toMatchObject({ status: "cancelled", async: true });
  }, 60_000);

  it("counts the app's queue where a user looks (the API, runlet apps), apart from the host's waiting calls", async () => {
    const { baseUrl, projectId, token } = runlet.local;
    const queueNow = async () => {
      const res = await fetch(`${baseUrl}/v2/projects/${projectId}/apps/backlog/replicas`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      return json(res);
    };
    /** The answer once `done` holds: the runs index hears of each change within about 200 ms. */
    const queueWhen = async (done: (runs: Json) => boolean) => {
      let now = await queueNow();
      for (const until = Date.now() + 20_000; !done(now.runs) && Date.now() < until; ) {
        await sleep(100);
        now = await queueNow();
      }
      return now;
    };
    const COUNT = 40;
    const first = await submitAsync("backlog", { ms: 120_000 }, "/backlog/first");
    await api.viewWhen("backlog", first, (v) => v.status === "running");
    await inPool(COUNT, 10, () => submitAsync("backlog", {}, "/backlog/rest"));

    const now = await queueWhen((runs) => runs.queued >= COUNT);
    expect(now.runs).toEqual({ queued: COUNT, running: 1 });
    // The host holds only the few runs each shard hands over: its waiting calls are not the queue.
    expect(now.queued).toBeLessThan(COUNT);
    const listed = JSON.parse((await cli(["apps", "--json"], runlet.env)).stdout);
    expect(listed.apps.find((a: Json) => a.name === "backlog").runs).toEqual({
      queued: COUNT,
      running: 1,
    });
    const printed = await cli(["apps"], runlet.env);
    expect(printed.stdout).toMatch(new RegExp(`^backlog .* ${COUNT} queued, 1 running `, "m"));
    // One app, as its dashboard page has it (a replica busy with the long run, on local-1).
    const shown = await cli(["apps", "show", "backlog"], runlet.env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^  async runs +${COUNT} queued, 1 running$`, "m"));
    expect(shown.stdout).toMatch(
      /^ {2}replicas now +0 starting, 0 idle, 1 busy; \d+ calls? waiting at the hosts$/m,
    );
    expect(shown.stdout).toMatch(/^ {2}on hosts +local-1 \(1, 1 busy, up\)$/m);
    const shownJson = JSON.parse(
      (await cli(["apps", "show", "backlog", "--json"], runlet.env)).stdout,
    );
    expect(shownJson).toMatchObject({
      app: { name: "backlog", scaling: { maxReplicas: 1 } },
      replicas: { runs: { queued: COUNT, running: 1 }, replicas: { busy: 1 } },
    });

    // Once the long run is cancelled the queue runs, and the count goes down to none.
    expect((await api.cancel("backlog", first)).status).toBe(200);
    await receiver.waitFor("/backlog/rest", COUNT, 60_000);
    expect((await queueWhen((runs) => runs.queued + runs.running === 0)).runs).toEqual({
      queued: 0,
      running: 0,
    });
  }, 120_000);

  it("cancels every queued run of an app at once (runlet cancel --app --queued), leaving the running one", async () => {
    // A burst sent by mistake: before, each of its runs had to be cancelled by its id.
    const first = await submitAsync("backlog", { ms: 120_000 }, "/purge/first");
    await api.viewWhen("backlog", first, (v) => v.status === "running");
    const queued = await inPool(30, 10, () => submitAsync("backlog", {}, "/purge/rest"));
    // The runs index hears of each within about 200 ms: the command reads the queue there.
    const listed = async () =>
      (await api.index("backlog")).filter((r) => r.status === "queued").map((r) => r.id);
    for (const until = Date.now() + 20_000; (await listed()).length < 30 && Date.now() < until; )
      await sleep(100);

    const done = await cli(["cancel", "--app", "backlog", "--queued", "--json"], runlet.env);
    expect(done.code, done.stderr).toBe(0);
    const result = JSON.parse(done.stdout);
    expect([...result.cancelled].sort()).toEqual([...queued].sort());
    expect(result.skipped).toEqual([]);
    for (const id of queued)
      expect(await api.view("backlog", id)).toMatchObject({
        status: "cancelled",
        started_at: null,
      });
    expect(await api.view("backlog", first)).toMatchObject({ status: "running" });
    const again = await cli(["cancel", "--app", "backlog", "--queued"], runlet.env);
    // (The index may list a cancelled run as queued for a moment more: read again, it is skipped.)
    expect(again.stdout).toMatch(/^Cancelled 0 queued runs of backlog\./);
    const half = await cli(["cancel", "--app", "backlog"], runlet.env);
    expect(half.code).toBe(1);
    expect(half.stderr).toContain("give a run id, or --app NAME with --queued");
    expect((await api.cancel("backlog", first)).status).toBe(200);
    expect(receiver.received("/purge/rest")).toHaveLength(0);
  }, 120_000);

  it("fails a run that waited longer than queue_timeout: 'expired in the queue', delivered, never run", async () => {
    const first = await submitAsync("expiry", { ms: 6_000 }, "/expiry/1");
    const submitted = Date.now();
    const second = await submitAsync("expiry", { ms: 10 }, "/expiry/2");

    const [expired] = await receiver.waitFor("/expiry/2", 1, 15_000);
    const waited = (expired?.at ?? 0) - submitted;
    expect(bodyOf(expired)).toMatchObject({
      run_id: second,
      status: "failure",
      error: { message: expect.stringContaining("expired in the queue") },
    });
    expect(waited).toBeGreaterThanOrEqual(1_900);
    expect(waited).toBeLessThanOrEqual(10_000);
    const view = await api.view("expiry", second);
    expect(view).toMatchObject({ status: "failure", started_at: null });
    expect(view.error.message).toContain("expired in the queue");

    const [done] = await receiver.waitFor("/expiry/1", 1, 20_000);
    expect(bodyOf(done)).toMatchObject({ run_id: first, status: "success" });
    // The replica is free now: a new run starts at once, and its process never ran the expired one.
    const third = await submitAsync("expiry", { ms: 0 }, "/expiry/3");
    const [after] = await receiver.waitFor("/expiry/3", 1, 15_000);
    expect(bodyOf(after)).toMatchObject({ run_id: third, status: "success" });
    expect(bodyOf(after).result.seen).not.toContain(second);
    expect(receiver.received("/expiry/2")).toHaveLength(1);
  }, 60_000);
});
