/**
 * `npm run bench:hosts`: what many runtime hosts cost and buy through the local Worker. Starts a
 * whole local Runlet with one host, then with three (`RUNLET_HOSTS`), and times sync runs of a
 * trivial function at concurrency 32 against a trivial Worker route at the same concurrency
 * (the floor, in the same run). With three hosts it also kills, by SIGKILL, the host an app's
 * calls go to, and times from the kill to the first call another host serves. On one machine
 * three hosts share its cores: this shows what placement costs, not a speed-up.
 */
import { Agent } from "node:http";
import {
  hostOfRun,
  newHome,
  pidOnPort,
  type Runlet,
  removeHome,
  startRunlet,
} from "../test/harness.ts";
import {
  countOptions,
  describeMachine,
  machineInfo,
  ms,
  requester,
  summarize,
  table,
} from "./stats.ts";

const HELP = `Usage: npm run bench:hosts -- [options]

Sync runs per second through the local Worker with 1 and with 3 runtime hosts at concurrency 32,
and the time from a host's death to the first call served by another.

Options:
  --seconds N   seconds of requests for each throughput (default 5)
  --kills N     host deaths timed with 3 hosts (default 5)
  --json        print the results as JSON instead of a table
  --help        show this help
`;

const args = countOptions("bench:hosts", HELP, { seconds: 5, kills: 5 });
const progress = (line: string) => process.stderr.write(`${line}\n`);
const CONCURRENCY = 32;

const APP = {
  "runlet.toml": ['name = "bench"', "[scaling]", "max_replicas = 6", "replica_concurrency = 16"]
    .concat([""])
    .join("\n"),
  "main.mjs": "export const run = () => ({ ok: true });\n",
};

const agent = new Agent({ keepAlive: true, maxSockets: 128 });
const request = requester(agent);

/** Requests per second of `call` at concurrency 32 for `seconds`, and each request's time. */
async function load(call: () => Promise<boolean>) {
  const times: number[] = [];
  let failures = 0;
  const started = performance.now();
  const until = started + args.seconds * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        if (!(await call())) failures++;
        times.push(performance.now() - t);
      }
    }),
  );
  return {
    perSecond: times.length / ((performance.now() - started) / 1000),
    failures,
    ...summarize(times),
  };
}

async function deploy(runlet: Runlet): Promise<void> {
  const { baseUrl, projectId, token } = runlet.local;
  const files = Object.entries(APP).map(([path, text]) => ({
    path,
    contentBase64: Buffer.from(text).toString("base64"),
  }));
  const res = await request(`${baseUrl}/v2/projects/${projectId}/apps`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ files }),
  });
  if (res.status !== 201) throw new Error(`deploy: ${res.status} ${res.body}`);
}

function caller(runlet: Runlet) {
  const { apiUrl, projectId, token } = runlet.local;
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  return () =>
    request(`${apiUrl}/v4/${projectId}/bench/run`, { method: "POST", headers, body: "{}" });
}

async function hosts(runlet: Runlet) {
  const { baseUrl, token } = runlet.local;
  const res = await request(`${baseUrl}/v2/hosts`, {
    method: "GET",
    headers: { authorization: `Bearer ${token}` },
  });
  return (JSON.parse(res.body) as { hosts: Array<{ id: string; address: string; state: string }> })
    .hosts;
}

/** Kills the host serving the app; ms from the kill to the first call another host served. */
async function failover(runlet: Runlet): Promise<number> {
  const call = caller(runlet);
  const first = await call();
  const victim = await hostOfRun(runlet, (JSON.parse(first.body) as { run_id: string }).run_id);
  const address = (await hosts(runlet)).find((h) => h.id === victim)?.address as string;
  const port = new URL(address).port;
  const pid = pidOnPort(port) as number;
  const killedAt = performance.now();
  process.kill(pid, "SIGKILL");
  for (;;) {
    const res = await call();
    const answeredAt = performance.now(); // before asking the runs index who served it
    if (res.status === 200) {
      const served = await hostOfRun(runlet, (JSON.parse(res.body) as { run_id: string }).run_id);
      if (served !== victim) {
        const took = answeredAt - killedAt;
        // Wait for the supervisor to bring it back before the next death.
        for (let i = 0; i < 200 && pidOnPort(port) === undefined; i++)
          await new Promise((r) => setTimeout(r, 100));
        await new Promise((r) => setTimeout(r, 3_000));
        return took;
      }
    }
    if (performance.now() - killedAt > 60_000) throw new Error("no other host served in 60 s");
  }
}

const results: Record<string, unknown> = {};
const rows: (string | number)[][] = [];
for (const n of [1, 3]) {
  progress(`starting a local Runlet with ${n} runtime host(s)…`);
  const home = await newHome();
  const runlet = await startRunlet(home, undefined, { RUNLET_HOSTS: String(n) });
  try {
    await deploy(runlet);
    const call = caller(runlet);
    for (let i = 0; i < 50; i++) await call(); // warm
    progress(`  floor and sync runs at concurrency ${CONCURRENCY} (${args.seconds} s each)…`);
    const floor = await load(
      async () =>
        (await request(`${runlet.local.apiUrl}/healthz`, { method: "GET" })).status === 200,
    );
    const sync = await load(async () => (await call()).status === 200);
    rows.push(
      [
        `trivial route, ${n} host(s)`,
        Math.round(floor.perSecond),
        ms(floor.p50),
        ms(floor.p99),
        "",
        floor.failures,
      ],
      [
        `sync runs, ${n} host(s)`,
        Math.round(sync.perSecond),
        ms(sync.p50),
        ms(sync.p99),
        (sync.perSecond / floor.perSecond).toFixed(2),
        sync.failures,
      ],
    );
    results[`hosts_${n}`] = {
      floor_per_s: floor.perSecond,
      sync_per_s: sync.perSecond,
      sync_p50: sync.p50,
      sync_p99: sync.p99,
      failures: sync.failures,
    };
    if (n === 3) {
      const deaths: number[] = [];
      for (let k = 0; k < args.kills; k++) {
        progress(`  host death ${k + 1}/${args.kills}…`);
        deaths.push(await failover(runlet));
      }
      const d = summarize(deaths);
      rows.push([`host death → first call on another (${d.n})`, "", ms(d.p50), ms(d.p99), "", ""]);
      results.failover_ms = deaths;
    }
  } finally {
    await runlet.stop();
    await removeHome(home);
  }
}

const machine = machineInfo();
if (args.json) {
  console.log(JSON.stringify({ machine, ...results }));
} else {
  console.log(`\n${describeMachine(machine)}\n`);
  console.log(table(["what", "per s", "p50 ms", "p99 ms", "vs floor", "failed"], rows));
  console.log(
    "\nOne machine: three hosts share its cores, so this is what placement costs, not a speed-up.",
  );
  console.log(`summary ${JSON.stringify(results)}`);
}
agent.destroy();
