/**
 * A second runtime host far away on a bad link: it joins the stack (`runlet host`) at the address
 * of a relay on loopback (test/relay.ts) that delays every byte 200 ms each way and, while async
 * runs go on, cuts every connection again and again. Each run must end once: a hand-over cut
 * after the host started its run stays there (worker/runs/host-calls.ts), none runs on both.
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { freePort } from "../cli/processes.ts";
import { client, sleep } from "../test/apps.ts";
import {
  BIN,
  cli,
  type Json,
  json,
  newHome,
  ROOT,
  type Runlet,
  removeHome,
} from "../test/harness.ts";
import { startRelay } from "../test/relay.ts";
import type { Scenario } from "./scenario.ts";

const APP = (name: string) => ({
  "runlet.toml": `name = "${name}"\nruntime = "managed"\nresponse_grace_period = 600\n[scaling]\nmax_replicas = 4\n`,
  "main.mjs": `export async function run(input, ctx) {
  console.log("start " + ctx.runId);
  await new Promise((r) => setTimeout(r, input?.ms ?? 0));
  return { runId: ctx.runId };
}\n`,
});

/** How many times each host started `runId` (its run's logs there). */
async function starts(stack: Runlet, hostUrls: string[], runId: string) {
  const token = (await readFile(join(stack.home, "internal-token"), "utf8")).trim();
  let n = 0;
  for (const url of hostUrls) {
    const res = await fetch(`${url}/internal/runs/${runId}/logs?project=${stack.local.projectId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    if (!res.ok) continue;
    const { lines } = (await res.json()) as { lines: Array<{ text: string }> };
    n += lines.filter((l) => l.text === `start ${runId}`).length;
  }
  return n;
}

export const farHostScenario: Scenario = {
  name: "a far second host: 200 ms each way, its connections cut as it starts a run",
  expected:
    "each async run ends success, started once over both hosts (a cut hand-over stays where it runs)",
  async run(stack) {
    const made = await cli(["hosts", "token", "--name", "far", "--json"], stack.env);
    const { token } = JSON.parse(made.stdout) as { token: string };
    const port = await freePort();
    const relay = await startRelay(port, 200);
    const home = await newHome();
    const args = ["host", "--control-plane", stack.local.baseUrl, "--address", relay.url];
    const far = spawn(
      process.execPath,
      [BIN, ...args, "--listen", "127.0.0.1", "--port", String(port), "--name", "far"],
      { cwd: ROOT, env: { ...stack.env, RUNLET_HOME: home, RUNLET_HOST_TOKEN: token } },
    );
    const exited = new Promise((resolve) => far.once("exit", resolve));
    try {
      const c = client(stack);
      const list = async () =>
        (JSON.parse((await cli(["hosts", "--json"], stack.env)).stdout) as { hosts: Json[] }).hosts;
      let farId: string | undefined;
      for (let i = 0; i < 60 && !farId; i++) {
        farId = (await list()).find((h) => h.address === relay.url && h.state === "up")?.id;
        if (!farId) await sleep(500);
      }
      if (!farId) return { observed: "the far host did not join within 30 s", ok: false };
      // An app whose calls the far host takes (the placement's own order per app).
      let app: string | undefined;
      for (let i = 0; i < 8 && !app; i++) {
        await c.deploy(APP(`far-${i}`));
        const res = await c.submit(`far-${i}`, { ms: 1 });
        const view = await c.view(`far-${i}`, (await json(res)).run_id);
        if (view.host === farId) app = `far-${i}`;
      }
      if (!app) return { observed: "no app of 8 was placed on the far host", ok: false };
      // Rounds: an async run; the link cut the moment the far host starts it (its 202 is then
      // 200 ms away in the relay); the run must end success, started once over both hosts.
      const internal = (await readFile(join(stack.home, "internal-token"), "utf8")).trim();
      const farBusy = async () => {
        const res = await fetch(`http://127.0.0.1:${port}/internal/metrics`, {
          headers: { authorization: `Bearer ${internal}` },
        });
        const { apps } = (await res.json()) as { apps: Json[] };
        return apps.some((a) => a.app === app && a.replicas.some((r: Json) => r.active > 0));
      };
      const ids: string[] = [];
      const views: Json[] = [];
      let cuts = 0;
      for (let round = 0; round < 6; round++) {
        await sleep(5_500); // past the 5 s a cut host is passed over
        const res = await c.submit(app, { ms: 1_500 }, "async=true");
        const id = (await json(res)).run_id as string;
        ids.push(id);
        for (let i = 0; i < 250; i++) {
          if (await farBusy()) {
            relay.cut();
            cuts++;
            break;
          }
          if ((await c.view(app, id)).status !== "queued") break; // it went elsewhere
          await sleep(20);
        }
        views.push(await c.viewWhen(app, id, (v) => ["success", "failure"].includes(v.status)));
      }
      const hosts = [`http://127.0.0.1:${port}`, `http://127.0.0.1:${stack.ports.host}`];
      const counts = await Promise.all(ids.map((id) => starts(stack, hosts, id)));
      const ok = views.every((v) => v.status === "success") && counts.every((n) => n === 1);
      const onFar = views.filter((v) => v.host === farId).length;
      return {
        observed: `${cuts} cuts; ${views.filter((v) => v.status === "success").length}/6 success (${onFar} on the far host); starts per run ${counts.join(",")}`,
        ok,
      };
    } finally {
      far.kill("SIGINT");
      await Promise.race([exited, sleep(20_000)]);
      await relay.close();
      await removeHome(home);
    }
  },
};
