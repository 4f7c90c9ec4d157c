/**
 * The chaos scenarios, each against the one real stack of `npm run chaos`: what is done to it,
 * what should happen, and what did. Every wait is bounded; traffic stays on loopback.
 */
import { client, sleep } from "../test/apps.ts";
import { json, processesOf, type Runlet, startRunlet } from "../test/harness.ts";
import type { Receiver } from "../test/receiver.ts";
import { kill9, pidOf, serving, until, workerdPids } from "../test/supervision.ts";
import { farHostScenario } from "./far-host.ts";
import { sandboxScenarios } from "./sandbox.ts";
import { errorText, type Scenario } from "./scenario.ts";

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

async function asyncRun(stack: Runlet, receiver: Receiver, path: string): Promise<string> {
  const hook = `webhookEndpoint=${encodeURIComponent(`${receiver.url}${path}`)}`;
  const res = await client(stack).submit("slow", { ms: 120_000 }, `async=true&${hook}`);
  if (res.status !== 202) throw new Error(`async run answered ${res.status}`);
  const id = (await json(res)).run_id as string;
  await client(stack).viewWhen("slow", id, (v) => v.status === "running", 30_000);
  return id;
}

/** Kills `component` with SIGKILL and times how long until the stack serves again. */
function killed(component: "control plane" | "worker"): Scenario["run"] {
  return async (stack) => {
    const pid = component === "worker" ? workerdPids(stack)[0] : pidOf(stack, component);
    if (!pid) return { observed: `no ${component} process found`, ok: false };
    const since = Date.now();
    await kill9(pid);
    await serving(stack, "slow", 60_000);
    return { observed: `restarted, serving again after ${seconds(since)}`, ok: true };
  };
}

export const SCENARIOS: Scenario[] = [
  {
    name: "SIGKILL of the runtime host",
    expected:
      "restarted; sync runs again within 30 s; its async run failure within 60 s, delivered",
    async run(stack, receiver) {
      const id = await asyncRun(stack, receiver, "/lost");
      const since = Date.now();
      await kill9(pidOf(stack, "runtime host") as number);
      await serving(stack, "slow", 30_000);
      const back = seconds(since);
      const view = await client(stack).viewWhen("slow", id, (v) => v.status !== "running", 60_000);
      const ended = seconds(since);
      const [delivery] = await receiver.waitFor("/lost", 1, 30_000);
      const ok = view.status === "failure" && delivery?.body.includes(id) === true;
      return {
        observed: `serving after ${back}; run ${view.status} after ${ended} (${errorText(view.error)}); delivered`,
        ok,
      };
    },
  },
  {
    name: "SIGKILL of the control plane",
    expected: "restarted; the management API and runs answer again",
    run: killed("control plane"),
  },
  {
    name: "SIGKILL of a workerd",
    expected: "the Worker restarted; the run API answers again",
    run: killed("worker"),
  },
  {
    name: "SIGKILL of a workerd mid-delivery",
    expected:
      "the attempt under way stays on record as cut short; the delivery goes on from it, 2 attempts in all",
    async run(stack, receiver) {
      receiver.script("/cut", ["hang"]); // the first attempt gets no answer: it is under way
      const hook = `webhookEndpoint=${encodeURIComponent(`${receiver.url}/cut`)}`;
      const submitted = await client(stack).submit("slow", { ms: 0 }, `async=true&${hook}`);
      const id = (await json(submitted)).run_id as string;
      await receiver.waitFor("/cut", 1, 30_000);
      const since = Date.now();
      await kill9(workerdPids(stack)[0] as number);
      await serving(stack, "slow", 60_000);
      // The attempt's deadline (10 s after it began, and 2 more) brings the next one.
      await receiver.waitFor("/cut", 2, 60_000);
      const view = await client(stack).viewWhen(
        "slow",
        id,
        (v) => (v.webhook as { state?: string } | undefined)?.state !== "pending",
        30_000,
      );
      const attempts = (view.webhook as { attempts: { status?: number; error?: string }[] })
        .attempts;
      const said = attempts.map((a) => a.status ?? a.error?.split(":")[0]).join(", ");
      const ok =
        attempts.length === 2 &&
        attempts[0]?.error?.startsWith("cut short") === true &&
        attempts[1]?.status === 200;
      return { observed: `attempts ${said}; delivered ${seconds(since)} after the kill`, ok };
    },
  },
  {
    name: "SIGTERM of the runtime host mid-call",
    expected:
      "the sync call in flight answers 200; its running async run ends 'the runtime host stopped'",
    async run(stack, receiver) {
      const id = await asyncRun(stack, receiver, "/stopped");
      const call = client(stack).submit("slow", { ms: 2_000 });
      await sleep(500); // the call is on its replica (2 replicas: one each)
      process.kill(pidOf(stack, "runtime host") as number, "SIGTERM");
      const answered = (await call).status;
      const view = await client(stack).viewWhen("slow", id, (v) => v.status !== "running", 60_000);
      await serving(stack, "slow", 60_000);
      const ok = answered === 200 && errorText(view.error).includes("the runtime host stopped");
      return { observed: `call ${answered}; run ${view.status}: ${errorText(view.error)}`, ok };
    },
  },
  {
    name: "Oversized bodies on one keep-alive client",
    expected: "413 for a 300 KB management PUT and a 20 MB run body; the next request answered",
    async run(stack) {
      const { baseUrl, apiUrl, projectId, token } = stack.local;
      const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
      const seen: number[] = [];
      for (let round = 0; round < 5; round++) {
        const big = await fetch(`${baseUrl}/v2/projects/${projectId}/secrets/BIG`, {
          method: "PUT",
          headers,
          body: JSON.stringify({ value: "x".repeat(300 * 1024) }),
        });
        await big.arrayBuffer();
        seen.push(
          big.status,
          (await fetch(`${baseUrl}/v2/projects/${projectId}/apps`, { headers })).status,
        );
        const run = await fetch(`${apiUrl}/v4/${projectId}/slow/run`, {
          method: "POST",
          headers,
          body: JSON.stringify({ pad: "x".repeat(20 * 1024 * 1024) }),
        });
        await run.arrayBuffer();
        seen.push(run.status, (await client(stack).submit("slow", {})).status);
      }
      const ok = seen.every((s, i) => (i % 2 === 0 ? s === 413 : s === 200));
      return {
        observed: `statuses ${[...new Set(seen)].join(", ")} over ${seen.length} requests, no reset`,
        ok,
      };
    },
  },
  ...sandboxScenarios(),
  farHostScenario,
  {
    name: "SIGKILL of runlet start",
    expected:
      "no component left after 10 s; a new start on the same home works, runs still readable",
    async run(stack) {
      // An async run that has ended: its row lives in its run shard (Durable Object storage).
      const submitted = await client(stack).submit("slow", { ms: 0 }, "async=true");
      const id = (await json(submitted)).run_id as string;
      await client(stack).viewWhen("slow", id, (v) => v.status === "success", 30_000);
      const since = Date.now();
      stack.process.kill("SIGKILL");
      const left = await until(
        "components gone",
        () => (processesOf(stack.home, stack.ports).length === 0 ? [] : undefined),
        10_000,
      ).catch(() => processesOf(stack.home, stack.ports));
      const gone = seconds(since);
      const again = await startRunlet(stack.home, stack.ports);
      try {
        const view = await client(again).view("slow", id);
        const ok = left.length === 0 && view.status === "success";
        return {
          observed: `${left.length} left after ${gone}; restarted; earlier run ${view.status}`,
          ok,
        };
      } finally {
        await again.stop();
      }
    },
  },
];
