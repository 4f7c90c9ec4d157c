/**
 * `npm run docs:screenshots`: makes the dashboard's pictures in docs/ again from the real thing —
 * a local Runlet started in a home of its own (examples/hello and a slow app deployed, a few
 * runs of each kind: sync and async, a failure, webhooks delivered and failed, one still
 * running), signed in as the local owner (an operator: the Hosts tab shows) through the CLI's
 * one-time link, in Debian's Chromium (test/chromium.ts), times shown in UTC. Writes each page of
 * SHOTS to docs/<name>.png; look at them before committing. Ports: RUNLET_CONTROL_PORT,
 * RUNLET_API_PORT and RUNLET_HOST_PORT if all are set, else free ones.
 */
import { join } from "node:path";
import { client, sleep, waitOrCancel } from "../test/apps.ts";
import { launchChromium } from "../test/chromium.ts";
import { cli, json, newHome, ROOT, removeHome, startRunlet } from "../test/harness.ts";
import { startReceiver } from "../test/receiver.ts";

/** The pictures: docs/<name>.png of the dashboard's `path`, `width` px wide. */
const SHOTS = [{ name: "dashboard-runs", path: "/dashboard/runs", width: 1280 }];

/** An app whose `run` holds its replica `input.ms`: a run still running in the picture. */
const NIGHTLY = {
  "runlet.toml": 'name = "nightly-report"\nruntime = "managed"',
  "main.mjs": `export async function run(input, ctx) {
  ${waitOrCancel("input?.ms ?? 0")}
  return { done: true };
}`,
};

const say = (line: string) => process.stderr.write(`${line}\n`);
const env = process.env;
const ports =
  env.RUNLET_CONTROL_PORT && env.RUNLET_API_PORT && env.RUNLET_HOST_PORT
    ? {
        control: Number(env.RUNLET_CONTROL_PORT),
        api: Number(env.RUNLET_API_PORT),
        host: Number(env.RUNLET_HOST_PORT),
      }
    : undefined;

say("starting a local Runlet…");
const home = await newHome();
const receiver = await startReceiver();
const runlet = await startRunlet(home, ports);
try {
  const deployed = await cli(["deploy", "examples/hello"], runlet.env);
  if (deployed.code !== 0) throw new Error(`deploy failed: ${deployed.stderr}`);
  const api = client(runlet);
  await api.deploy(NIGHTLY);

  say("making runs…");
  const hook = (path: string) =>
    `async=true&webhookEndpoint=${encodeURIComponent(`${receiver.url}${path}`)}`;
  const runIds: Array<[string, string]> = [];
  const call = async (app: string, fn: string, input: unknown, query = "") => {
    const res = await api.submit(app, input, query, fn);
    const id = (await json(res)).run_id as string | undefined;
    if (id) runIds.push([app, id]);
    await sleep(300); // a second apart or so, as people call
  };
  await call("hello", "run", { name: "Ada" });
  await call("hello", "run", { name: "Grace" });
  await call("hello", "run", { name: "Edsger" }, hook("/orders"));
  await call("hello", "fail", { message: "the upstream API said 503" });
  await call("hello", "run", { name: "Barbara" }, hook("/orders"));
  receiver.script("/billing", [500]); // a 5xx is final: failed, one attempt
  await call("hello", "run", { name: "Alan" }, hook("/billing"));
  await call("hello", "teapot", {});
  await call("hello", "run", { name: "Katherine" });
  await call("nightly-report", "run", { ms: 600_000 }, "async=true");

  // Once the runs index has each run, and every webhook has ended.
  say("waiting for the runs index…");
  const headers = { authorization: `Bearer ${runlet.local.token}` };
  const index = `${runlet.local.baseUrl}/v2/projects/${runlet.local.projectId}/runs`;
  for (let tries = 0; ; tries++) {
    const { runs } = (await json(await fetch(index, { headers }))) as {
      runs: Array<{ status: string; webhook?: { state: string } }>;
    };
    const settled =
      runs.length === runIds.length &&
      runs.every((r) => r.webhook?.state !== "pending") &&
      runs.some((r) => r.status === "running");
    if (settled) break;
    if (tries > 300) throw new Error(`the runs index did not settle: ${JSON.stringify(runs)}`);
    await sleep(100);
  }

  const signIn = await cli(["dashboard", "--json"], runlet.env);
  const { url } = JSON.parse(signIn.stdout) as { url: string };
  const browser = await launchChromium();
  try {
    for (const shot of SHOTS) {
      const context = await browser.newContext({
        viewport: { width: shot.width, height: 400 },
        timezoneId: "UTC",
        colorScheme: "light",
      });
      const page = await context.newPage();
      await page.goto(url);
      await page.goto(`${runlet.local.baseUrl}${shot.path}`);
      const file = join(ROOT, "docs", `${shot.name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      say(`wrote docs/${shot.name}.png`);
      await context.close();
    }
  } finally {
    await browser.close();
  }
} finally {
  await runlet.stop();
  await receiver.close();
  await removeHome(home);
}
