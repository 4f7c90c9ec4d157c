// Spare processes through the real host: started before any app, taken by a cold start, refilled,
// and each replica working in a copy of its version's files that goes away with it.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { appRoot, appsRoot, versionDirName } from "../../common/app-paths.ts";
import type { RunningHost } from "../server.ts";
import {
  configOf,
  eventually,
  hostClient,
  isGone,
  newHome,
  removeHome,
  startTestHost,
} from "../test-support.ts";

const APP = {
  "main.mjs": `
import { writeFileSync } from "node:fs";
export function where() {
  writeFileSync("out.txt", "written by the app");
  return { pid: process.pid, cwd: process.cwd(), app: process.env.RUNLET_APP, spare: process.env.RUNLET_SPARE ?? null };
}
`,
};

let home: string;
let host: RunningHost;
let client: ReturnType<typeof hostClient>;

beforeEach(async () => {
  home = await newHome();
  host = await startTestHost(home, { limits: { spares: 2 } });
  client = hostClient(host.url);
});

afterEach(async () => {
  await host.close();
  await removeHome(home);
});

it("answers a cold start from a spare started before the app was deployed, then refills", async () => {
  const before = await eventually(client.spares, (pids) => pids.length === 2);
  await client.deploy("p", "app", 1, APP);
  const first = await client.invoke("p", "app", "where");
  expect(first.status).toBe(200);
  const seen = first.body.result as { pid: number; app: string; spare: string | null };
  expect(before).toContain(seen.pid);
  expect(seen).toMatchObject({ app: "app", spare: null }); // the app's environment, not a spare's
  const after = await eventually(client.spares, (pids) => pids.length === 2);
  expect(after).not.toContain(seen.pid);
});

it("gives each replica its own copy of the files, removed when it stops", async () => {
  await client.deploy(
    "p",
    "app",
    1,
    APP,
    configOf("app", { scaling: { max_replicas: 2, cooldown: 0 } }),
  );
  const answers = await Promise.all([1, 2].map(() => client.invoke("p", "app", "where")));
  const replicas = answers.map((a) => a.body.result as { pid: number; cwd: string });
  expect(new Set(replicas.map((r) => r.cwd)).size).toBe(2);
  const versionDir = join(appRoot(appsRoot(home), "p", "app"), versionDirName(1));
  expect(existsSync(join(versionDir, "out.txt"))).toBe(false); // the deployed files stay as deployed
  for (const { pid, cwd } of replicas) {
    await eventually(
      async () => isGone(pid),
      (gone) => gone,
    ); // cooldown 0: stopped once idle
    await eventually(
      async () => existsSync(cwd),
      (exists) => !exists,
    );
  }
});

it("replaces a waiting spare that died, without waiting for the next cold start", async () => {
  // Before, a spare killed while it waited (kill -9, the OOM killer) left one fewer until a
  // cold start took another: that start, or the next, paid for starting a process.
  const [dead] = await eventually(client.spares, (pids) => pids.length === 2);
  process.kill(dead as number, "SIGKILL");
  const after = await eventually(
    client.spares,
    (pids) => pids.length === 2 && !pids.includes(dead as number),
  );
  expect(after).not.toContain(dead);
});
