/**
 * `npm run bench:edge`: the run API's speed through the local Worker. Starts a whole local
 * Runlet (`runlet start`: wrangler's dev server with the run Durable Objects, the runtime host, the
 * control plane) on a temporary home and a webhook receiver on loopback, then times: a trivial
 * Worker route (the floor of the local runtime), a warm synchronous run end to end, the
 * acknowledgement of an async run, async runs accepted per second, and the time from a
 * function's completion to the first delivery attempt of its webhook. Prints a table of medians
 * and p99, and last a one-line machine-readable summary.
 */
import { Agent, createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { newHome, removeHome, startRunlet } from "../test/harness.ts";
import {
  countOptions,
  describeMachine,
  fileSystemOf,
  machineInfo,
  measure,
  ms,
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
  --seconds N      seconds of async submissions for runs/s (default 3)
  --json           print the results as JSON instead of a table
  --help           show this help
`;

const args = countOptions("bench:edge", HELP, { samples: 300, deliveries: 50, seconds: 3 });
const { samples, deliveries, seconds } = args;

const progress = (line: string) => process.stderr.write(`${line}\n`);

/** `stamp` says when the function finished, by the same clock the receiver reads. */
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

/** A lean keep-alive client: what is measured is the Worker, not the client. */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
function request(
  url: string,
  init: { method: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: init.method, agent, headers: init.headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

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
  await expectStatus(
    201,
    request(`${baseUrl}/v2/projects/${projectId}/apps`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        files: Object.entries(APP).map(([path, text]) => ({
          path,
          contentBase64: Buffer.from(text).toString("base64"),
        })),
      }),
    }),
  );
  const runUrl = (fn: string, query = "") => `${apiUrl}/v4/${projectId}/bench/${fn}${query}`;
  const post = (url: string) => request(url, { method: "POST", headers, body: "{}" });

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

  progress(`async runs per second (concurrency 16, ${seconds} s)…`);
  let accepted = 0;
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() < until) {
        await expectStatus(202, post(runUrl("run", "?async=true")));
        accepted++;
      }
    }),
  );
  const runsPerSecond = accepted / ((performance.now() - started) / 1000);

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
  };
  if (args.json) {
    console.log(JSON.stringify({ machine, rows: Object.fromEntries(rows), summary }, null, 2));
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
    console.log(
      `\nasync runs accepted per second at concurrency 16: ${Math.round(runsPerSecond)}` +
        `\nmachine: ${describeMachine(machine)}; the local state on ${machine.stateFileSystem}`,
    );
  }
  console.log(
    `bench:edge ack_p50_ms=${ms(summary.ack_p50_ms)} ack_p99_ms=${ms(summary.ack_p99_ms)} ` +
      `sync_p50_ms=${ms(summary.sync_p50_ms)} first_delivery_ms=${ms(summary.first_delivery_ms)} ` +
      `runs_per_s=${Math.round(summary.runs_per_s)} sync_vs_floor=${summary.sync_vs_floor.toFixed(2)}`,
  );
} finally {
  await runlet.stop();
  receiver.closeAllConnections();
  receiver.close();
  await removeHome(home);
}
