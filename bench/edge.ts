/**
 * `npm run bench:edge`: the run API's speed through the local Worker. Starts a whole local
 * Runlet (`runlet start`: wrangler's dev server with the run Durable Objects, the runtime host, the
 * control plane) on a temporary home and a webhook receiver on loopback, then times: a trivial
 * Worker route (the floor of the local runtime), a warm synchronous run end to end, the
 * acknowledgement of an async run, async runs accepted per second against the trivial route's
 * requests per second at the same concurrency, how fast a queue of async runs drains through
 * an app's replicas, and the time from a function's completion to the first delivery attempt
 * of its webhook. Prints a table of medians and p99, and last a one-line machine-readable
 * summary.
 */
import { Agent, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { newHome, removeHome, startRunlet } from "../test/harness.ts";
import { cpuByPart, cpuSpent, cpuTable, perRun } from "./cpu.ts";
import { drainRuns } from "./drain.ts";
import {
  countOptions,
  describeMachine,
  fileSystemOf,
  machineInfo,
  measure,
  ms,
  requester,
  type Summary,
  summarize,
  table,
} from "./stats.ts";

const HELP = `Usage: npm run bench:edge -- [options]

Times the run API through the local Worker: sync runs, async acknowledgements, async runs per
second and webhook delivery after completion.

Options:
  --samples N      samples per latency measurement, after 20 warm-up runs (default 300)
  --deliveries N   async runs with a webhook whose first delivery is timed (default 50)
  --seconds N      seconds of requests for each throughput at concurrency 16 (default 3)
  --drain N        async runs of a no-op function on max_replicas = 4, timed until the last
                   ended (default 2000)
  --json           print the results as JSON instead of a table
  --help           show this help
`;

const args = countOptions("bench:edge", HELP, {
  samples: 300,
  deliveries: 50,
  seconds: 3,
  drain: 2000,
});
const { samples, deliveries, seconds, drain } = args;

const progress = (line: string) => process.stderr.write(`${line}\n`);

/** `stamp` says when the function finished, by the same clock the receiver reads. */
const DRAIN_APP = {
  "runlet.toml": [
    'name = "drain"',
    "[scaling]",
    "max_replicas = 4",
    "replica_concurrency = 1",
  ].join("\n"),
  "main.mjs": "export const run = () => null;\n",
};

const APP = {
  "runlet.toml": [
    'name = "bench"',
    'runtime = "managed"',
    "[scaling]",
    "min_replicas = 1",
    "max_replicas = 2",
    "replica_concurrency = 64",
  ].join("\n"),
  "main.mjs": `
export const run = () => ({ ok: true });
export const stamp = () => ({ done_at: Date.now() });
`,
};

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const request = requester(agent);

async function expectStatus(
  want: number,
  call: Promise<{ status: number; body: string }>,
): Promise<string> {
  const { status, body } = await call;
  if (status !== want) throw new Error(`expected ${want}, got ${status}: ${body}`);
  return body;
}

// ---- a webhook receiver: when each run's first delivery arrived, and what it said ----
const arrivals = new Map<string, { at: number; body: string }>();
const receiver = createServer((req, res) => {
  const at = Date.now();
  let body = "";
  req.on("data", (chunk) => {
    body += chunk;
  });
  req.on("end", () => {
    const runId = String(req.headers["x-request-id"]);
    if (!arrivals.has(runId)) arrivals.set(runId, { at, body });
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

progress("starting a local Runlet (runlet start)…");
const home = await newHome();
const runlet = await startRunlet(home);
try {
  const { apiUrl, baseUrl, projectId, token } = runlet.local;
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  for (const app of [APP, DRAIN_APP]) {
    await expectStatus(
      201,
      request(`${baseUrl}/v2/projects/${projectId}/apps`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          files: Object.entries(app).map(([path, text]) => ({
            path,
            contentBase64: Buffer.from(text).toString("base64"),
          })),
        }),
      }),
    );
  }
  const runUrl = (fn: string, query = "", app = "bench") =>
    `${apiUrl}/v4/${projectId}/${app}/${fn}${query}`;
  const post = (url: string) => request(url, { method: "POST", headers, body: "{}" });
  const get = (url: string) => request(url, { method: "GET", headers });

  /** Requests per second of `call` at concurrency 16 for `seconds`. */
  async function throughput(call: () => Promise<unknown>): Promise<number> {
    let done = 0;
    const started = performance.now();
    const until = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (performance.now() < until) {
          await call();
          done++;
        }
      }),
    );
    return done / ((performance.now() - started) / 1000);
  }

  progress("floor: a trivial Worker route…");
  const floor = await measure(
    () => expectStatus(200, request(`${apiUrl}/healthz`, { method: "GET" })),
    {
      samples,
    },
  );
  progress("warm sync runs…");
  const sync = await measure(() => expectStatus(200, post(runUrl("run"))), { samples });
  progress("async acknowledgements…");
  const ack = await measure(() => expectStatus(202, post(runUrl("run", "?async=true"))), {
    samples,
  });

  progress(`throughput at concurrency 16 (${seconds} s each): trivial route, async submissions…`);
  const floorPerSecond = await throughput(() =>
    expectStatus(200, request(`${apiUrl}/healthz`, { method: "GET" })),
  );
  const stack = () => cpuByPart(runlet.process.pid as number, runlet.ports.api);
  let cpuBefore = stack();
  let acceptedRuns = 0;
  const runsPerSecond = await throughput(async () => {
    await expectStatus(202, post(runUrl("run", "?async=true")));
    acceptedRuns++;
  });
  await new Promise((r) => setTimeout(r, 1_000)); // the last runs accepted end meanwhile
  const acceptedCpu = cpuSpent(cpuBefore, stack());

  progress(`draining ${drain} async runs of a no-op function on max_replicas = 4…`);
  await new Promise((r) => setTimeout(r, 1_000)); // let the runs above finish
  cpuBefore = stack();
  const drained = await drainRuns(drain, {
    submit: async () =>
      JSON.parse(await expectStatus(202, post(runUrl("run", "?async=true", "drain")))).run_id,
    view: async (id) => JSON.parse(await expectStatus(200, get(runUrl(`runs/${id}`, "", "drain")))),
  });
  const drainCpu = cpuSpent(cpuBefore, stack());

  progress("function completion → first webhook delivery…");
  await new Promise((r) => setTimeout(r, 2_000)); // let the runs above finish
  const hook = `?async=true&webhookEndpoint=${encodeURIComponent(hookUrl)}`;
  const gaps: number[] = [];
  for (let i = 0; i < deliveries + 5; i++) {
    const { run_id: runId } = JSON.parse(await expectStatus(202, post(runUrl("stamp", hook))));
    const deadline = Date.now() + 10_000;
    while (!arrivals.has(runId)) {
      if (Date.now() > deadline) throw new Error(`no delivery of ${runId} within 10 s`);
      await new Promise((r) => setTimeout(r, 1));
    }
    const arrival = arrivals.get(runId) as { at: number; body: string };
    const doneAt = JSON.parse(arrival.body).result.done_at as number;
    if (i >= 5) gaps.push(arrival.at - doneAt); // the first five warm the path up
  }
  const firstDelivery = summarize(gaps);

  const rows: Array<[string, Summary]> = [
    ["trivial Worker route (GET /healthz), the floor", floor],
    ["warm sync run, end to end", sync],
    ["async run acknowledged (202)", ack],
    ["function completion → first delivery attempt", firstDelivery],
  ];
  // A new Durable Object per async run is new files: the state's file system shapes the ack.
  const machine = { ...machineInfo(), stateFileSystem: fileSystemOf(home) };
  const summary = {
    ack_p50_ms: ack.p50,
    ack_p99_ms: ack.p99,
    sync_p50_ms: sync.p50,
    first_delivery_ms: firstDelivery.p50,
    runs_per_s: runsPerSecond,
    sync_vs_floor: sync.p50 / floor.p50,
    ack_vs_floor: ack.p50 / floor.p50,
    accepted_per_s: runsPerSecond,
    accepted_vs_floor: runsPerSecond / floorPerSecond,
    drained_per_s: drained.perSecond,
    drain_failures: drained.failures,
  };
  // CPU per run of each part of the stack, in the throughput phase and in the drain.
  const cpu = {
    accepted: perRun(acceptedCpu, acceptedRuns),
    drain: perRun(drainCpu, drain),
  };
  if (args.json) {
    console.log(JSON.stringify({ machine, rows: Object.fromEntries(rows), summary, cpu }, null, 2));
  } else {
    console.log(
      `\nRun API through the local Worker (wrangler's dev server), ${samples} samples each (ms)\n`,
    );
    console.log(
      table(
        ["measurement", "p50 ms", "p99 ms"],
        rows.map(([name, s]) => [name, ms(s.p50), ms(s.p99)]),
      ),
    );
    if (acceptedCpu.size > 0) {
      console.log(
        "\nCPU per run by part of the stack (ms, from /proc; each phase until its runs ended)\n",
      );
      console.log(
        cpuTable(
          ["async runs at concurrency 16", cpu.accepted],
          [`drain of ${drain}, each end read`, cpu.drain],
        ),
      );
    }
    console.log(
      `\nat concurrency 16: trivial route ${Math.round(floorPerSecond)}/s, async runs accepted ${Math.round(runsPerSecond)}/s` +
        `\n${drain} queued no-op runs on max_replicas = 4: drained at ${Math.round(drained.perSecond)} runs/s (first submission → last end), ${drained.failures} not success` +
        `\nmachine: ${describeMachine(machine)}; the local state on ${machine.stateFileSystem}`,
    );
  }
  console.log(
    `bench:edge ack_p50_ms=${ms(summary.ack_p50_ms)} ack_p99_ms=${ms(summary.ack_p99_ms)} ` +
      `sync_p50_ms=${ms(summary.sync_p50_ms)} first_delivery_ms=${ms(summary.first_delivery_ms)} ` +
      `runs_per_s=${Math.round(summary.runs_per_s)} sync_vs_floor=${summary.sync_vs_floor.toFixed(2)} ` +
      `ack_vs_floor=${summary.ack_vs_floor.toFixed(2)} accepted_per_s=${Math.round(summary.accepted_per_s)} ` +
      `accepted_vs_floor=${summary.accepted_vs_floor.toFixed(2)} drained_per_s=${Math.round(summary.drained_per_s)} ` +
      `drain_failures=${summary.drain_failures}`,
  );
} finally {
  await runlet.stop();
  receiver.closeAllConnections();
  receiver.close();
  await removeHome(home);
}
