import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, inPool, sleep, sleeper } from "./apps.ts";
import {
  type Json,
  json,
  killStack,
  newHome,
  portsFree,
  processesOf,
  processTree,
  type Runlet,
  removeHome,
  startRunlet,
} from "./harness.ts";
import { type Receiver, startReceiver } from "./receiver.ts";

// Issue 11: accepted async runs survive a hard kill of the whole stack. Every process of a real
// `runlet start` gets SIGKILL at once while runs are running and queued; a new `runlet start`
// on the same home and ports brings every accepted run to an end within 60 s of its ready line.

const ENDED = ["success", "failure", "cancelled"];
const byId = (a: Json, b: Json) => a.id.localeCompare(b.id);

describe("a hard kill of the whole stack with runs queued and running", () => {
  let receiver: Receiver;
  const homes: string[] = [];
  const stacks: Runlet[] = [];

  beforeAll(async () => {
    receiver = await startReceiver();
  });

  afterAll(async () => {
    for (const stack of stacks) await stack.stop();
    await receiver?.close();
    for (const home of homes) await removeHome(home);
  });

  /** A stack on a new home with `app` deployed. */
  async function stackWith(app: Record<string, string>) {
    const home = await newHome();
    homes.push(home);
    const stack = await startRunlet(home);
    stacks.push(stack);
    await client(stack).deploy(app);
    return stack;
  }

  /** SIGKILL for the whole stack; checks nothing of it is left; the same home and ports again. */
  async function crashAndRestart(stack: Runlet) {
    const killed = await killStack(stack);
    stacks.splice(stacks.indexOf(stack), 1);
    // runlet start, runtime host, control plane, the worker's node and workerd, a replica…
    expect(killed.length).toBeGreaterThanOrEqual(5);
    expect(processesOf(stack.home, stack.ports)).toEqual([]);
    await portsFree(stack.ports);
    const again = await startRunlet(stack.home, stack.ports);
    stacks.push(again);
    return { again, ready: Date.now() };
  }

  /** The runs' views once all have ended, or 60 s after `ready` (then the test fails). */
  async function ends(stack: Runlet, app: string, ids: string[], ready: number) {
    const api = client(stack);
    let views: Json[] = [];
    do {
      if (views.length) await sleep(500);
      views = await inPool(ids.length, 10, (i) => api.view(app, ids[i] as string));
    } while (views.some((v) => !ENDED.includes(v.status)) && Date.now() < ready + 60_000);
    const open = views.filter((v) => !ENDED.includes(v.status));
    expect(
      open.map((v) => `${v.run_id} ${v.status}`),
      "not ended 60 s after the restart",
    ).toEqual([]);
    return views;
  }

  /** The app's runs in the runs index once they show `want` (bounded: reported in batches). */
  async function listed(stack: Runlet, app: string, want: Json[]) {
    let rows: Json[] = [];
    for (const until = Date.now() + 15_000; Date.now() < until; await sleep(250)) {
      rows = (await client(stack).index(app)).map((r) => ({ id: r.id, status: r.status }));
      if (want.every((w) => rows.some((r) => r.id === w.id && r.status === w.status))) break;
    }
    return rows.sort(byId);
  }

  it("ends every accepted run after a restart: the queued ones run, the running one failed as lost", async () => {
    const first = await stackWith(
      sleeper([
        'name = "sturdy"',
        'runtime = "managed"',
        "response_grace_period = 600",
        "[scaling]",
        "max_replicas = 1",
        "replica_concurrency = 1",
      ]),
    );
    const api = client(first);
    const hook = (n: number) =>
      `webhookEndpoint=${encodeURIComponent(`${receiver.url}/sturdy/${n}`)}`;
    const ids: string[] = [];
    // The first runs long enough to be running at the kill; the rest, queued behind it (FIFO),
    // are short, so the restarted stack ends them in moments.
    for (let n = 0; n < 5; n++) {
      const ms = n === 0 ? 20_000 : 500;
      const res = await api.submit("sturdy", { ms }, `async=true&${hook(n)}`);
      expect(res.status).toBe(202);
      ids.push((await json(res)).run_id);
    }
    // One runs, the rest wait.
    let views: Json[] = [];
    const deadline = Date.now() + 30_000;
    while (!views.some((v) => v.status === "running")) {
      if (Date.now() > deadline) throw new Error(`none running: ${JSON.stringify(views)}`);
      await sleep(100);
      views = await Promise.all(ids.map((id) => api.view("sturdy", id)));
    }
    expect(views.map((v) => v.status).sort()).toEqual([
      ...["queued", "queued", "queued", "queued"],
      "running",
    ]);
    const lost = ids[views.findIndex((v) => v.status === "running")] as string;
    expect(lost, "the oldest run runs first").toBe(ids[0]);

    const { again, ready } = await crashAndRestart(first);
    for (const v of await ends(again, "sturdy", ids, ready)) {
      if (v.run_id === lost) {
        expect(v).toMatchObject({ status: "failure" });
        expect(v.error?.message).toContain("lost the run");
      } else {
        expect(v).toMatchObject({ status: "success" });
      }
    }

    // Each run's end reaches its webhook; the new replica ran each queued run once and never the
    // lost one (each result lists the runs its process has started).
    let started: string[] = [];
    for (const [n, id] of ids.entries()) {
      const [delivery] = await receiver.waitFor(`/sturdy/${n}`, 1, 15_000);
      const body = JSON.parse(delivery?.body ?? "null");
      expect(body).toMatchObject({ run_id: id, status: id === lost ? "failure" : "success" });
      if (body.result?.seen.length > started.length) started = body.result.seen;
    }
    expect([...started].sort()).toEqual(ids.filter((id) => id !== lost).sort());

    const want = ids.map((id) => ({ id, status: id === lost ? "failure" : "success" }));
    expect(await listed(again, "sturdy", want)).toEqual(want.sort(byId));
  }, 180_000);

  it("ends every run of a burst killed a third of the way, delivers each and lists each once", async () => {
    const first = await stackWith(
      sleeper(['name = "busy"', 'runtime = "managed"', "[scaling]", "max_replicas = 4"], 20),
    );
    const api = client(first);
    const hook = `async=true&webhookEndpoint=${encodeURIComponent(`${receiver.url}/busy`)}`;
    const answers = await inPool(160, 20, async () => {
      const res = await api.submit("busy", {}, hook);
      return { status: res.status, id: (await json(res)).run_id as string };
    });
    expect(answers.filter((a) => a.status !== 202)).toEqual([]);
    const ids = answers.map((a) => a.id);
    // Once a third has run, kill it the moment one more run's end reaches its webhook: some runs
    // have just ended, some are running, the rest are queued.
    const deadline = Date.now() + 60_000;
    while (receiver.received("/busy").length < 60 && Date.now() < deadline) await sleep(1);

    const { again, ready } = await crashAndRestart(first);
    const views = await ends(again, "busy", ids, ready);
    // Only a run that was running when the host died may fail, as lost; at most max_replicas.
    const failed = views.filter((v) => v.status !== "success");
    for (const v of failed) expect(v.error?.message).toContain("lost the run");
    expect(failed.length).toBeLessThanOrEqual(4);

    // Each run's end reached its webhook (a run may have run again after the crash: its last
    // delivery is its end).
    const delivered = new Map<string, string>();
    for (const until = Date.now() + 15_000; delivered.size < ids.length && Date.now() < until; ) {
      await sleep(250);
      for (const d of receiver.received("/busy")) {
        const body = JSON.parse(d.body);
        delivered.set(body.run_id, body.status);
      }
    }
    const want = views.map((v) => ({ id: v.run_id, status: v.status })).sort(byId);
    expect([...delivered].map(([id, status]) => ({ id, status })).sort(byId)).toEqual(want);
    // …and the runs index lists each exactly once, as it ended.
    expect(await listed(again, "busy", want)).toEqual(want);
  }, 180_000);

  it("lists a sync run answered just before the kill, whose report had not reached the index", async () => {
    const first = await stackWith(sleeper(['name = "quick"', 'runtime = "managed"']));
    const api = client(first);
    const call = async () => {
      const res = await api.submit("quick", { ms: 0 });
      expect(res.status).toBe(200);
      return (await json(res)).run_id as string;
    };
    const warm = await call(); // the Worker knows the token, the app and the host from now on
    await listed(first, "quick", [{ id: warm, status: "success" }]);
    // The control plane frozen, the host's report of the next run cannot arrive before the kill.
    const command = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8");
    const controlPlane = processTree(first.process.pid as number).find((pid) =>
      command(pid).includes("control-plane/server.ts"),
    );
    expect(controlPlane).toBeDefined();
    process.kill(controlPlane as number, "SIGSTOP");
    const answered = await call();

    const { again } = await crashAndRestart(first);
    const want = [warm, answered].map((id) => ({ id, status: "success" })).sort(byId);
    expect(await listed(again, "quick", want)).toEqual(want);
  }, 120_000);
});
