import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOrCreateInternalToken } from "../control-plane/home.ts";
import { client, sleeper } from "./apps.ts";
import { json, newHome, type Runlet, removeHome, startRunlet } from "./harness.ts";
import { type Receiver, startReceiver } from "./receiver.ts";
import { kill9, pidOf, serving, until } from "./supervision.ts";

// Issue 12: a lost host costs only its own runs. The runtime host killed (SIGKILL) while it runs
// an async run: `runlet start` restarts it, sync runs work again within 30 s, and the run it held
// ends `failure` within 60 s, delivered. A host stopped gracefully (SIGTERM to `runlet start`)
// ends its running async runs `failure` ("the runtime host stopped") and lets sync calls in
// flight finish.

const APP = sleeper([
  'name = "slow"',
  'runtime = "managed"',
  "response_grace_period = 600",
  "[scaling]",
  "max_replicas = 2",
]);

describe("a runtime host lost or stopped", () => {
  let home: string;
  let receiver: Receiver;
  const stacks: Runlet[] = [];

  beforeAll(async () => {
    receiver = await startReceiver();
    home = await newHome();
    const stack = await startRunlet(home);
    stacks.push(stack);
    await client(stack).deploy(APP);
  });

  afterAll(async () => {
    for (const stack of stacks) await stack.stop();
    await receiver?.close();
    await removeHome(home);
  });

  /** True once the host's replicas of "slow" have `calls` calls running, else undefined. */
  async function activeOn(stack: Runlet, calls: number): Promise<true | undefined> {
    const token = await loadOrCreateInternalToken(home);
    const res = await fetch(`http://127.0.0.1:${stack.ports.host}/internal/metrics`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const { apps } = (await res.json()) as {
      apps: { app: string; replicas: { active: number }[] }[];
    };
    const slow = apps.filter((a) => a.app === "slow").flatMap((a) => a.replicas);
    return slow.reduce((sum, r) => sum + r.active, 0) >= calls ? true : undefined;
  }

  /** An async run of 2 minutes with a webhook at `path`, once it is running. */
  async function longRun(stack: Runlet, path: string): Promise<string> {
    const api = client(stack);
    const hook = `webhookEndpoint=${encodeURIComponent(`${receiver.url}${path}`)}`;
    const res = await api.submit("slow", { ms: 120_000 }, `async=true&${hook}`);
    expect(res.status).toBe(202);
    const id = (await json(res)).run_id as string;
    await api.viewWhen("slow", id, (v) => v.status === "running", 30_000);
    return id;
  }

  it("restarts a killed host: sync runs work within 30 s, its async run fails within 60 s, delivered", async () => {
    const stack = stacks[0] as Runlet;
    const api = client(stack);
    const lost = await longRun(stack, "/lost");

    await kill9(pidOf(stack, "runtime host") as number);
    const killed = Date.now();
    await serving(stack, "slow", 30_000);
    expect(Date.now() - killed, "sync runs again").toBeLessThan(30_000);

    const view = await api.viewWhen("slow", lost, (v) => v.status !== "running", 60_000);
    expect(Date.now() - killed, "the lost run's end").toBeLessThan(60_000);
    expect(view).toMatchObject({ status: "failure" });
    expect(view.error?.message).toContain("the runtime host lost the run");
    const [delivery] = await receiver.waitFor("/lost", 1, 30_000);
    expect(JSON.parse(delivery?.body ?? "null")).toMatchObject({
      run_id: lost,
      status: "failure",
    });
    expect(stack.output()).toContain("the runtime host is back (restart 1)");
  }, 180_000);

  it("stops gracefully on SIGTERM: a sync call in flight ends, a running async run fails as stopped", async () => {
    const stack = stacks[0] as Runlet;
    const api = client(stack);
    const stopped = await longRun(stack, "/stopped");
    const sync = api.submit("slow", { ms: 4_000 });
    await until("the sync call running beside the async run", () => activeOn(stack, 2), 15_000);

    const code = await stack.stop(); // SIGTERM to runlet start
    stacks.splice(stacks.indexOf(stack), 1);
    expect(code).toBe(0);
    const answer = await sync;
    expect(answer.status).toBe(200);
    expect((await json(answer)).result).toMatchObject({ end: expect.any(Number) });

    const again = await startRunlet(home, stack.ports);
    stacks.push(again);
    const view = await client(again).viewWhen("slow", stopped, (v) => v.status !== "running");
    expect(view).toMatchObject({
      status: "failure",
      error: { message: "the runtime host stopped" },
    });
    const [delivery] = await receiver.waitFor("/stopped", 1, 30_000);
    expect(JSON.parse(delivery?.body ?? "null")).toMatchObject({
      run_id: stopped,
      status: "failure",
      error: { message: "the runtime host stopped" },
    });
  }, 180_000);
});
