/**
 * One local Runlet for the end-to-end files that only use its APIs, started once for several
 * files instead of once per file: a stack's start is about 6.5 s of CPU.
 *
 * Each file gets a project of its own, made by the local owner: its apps, runs, secrets, audit
 * log and runs index are apart from the other files'. What a project does not separate (the
 * runtime host and its slots, the home's logs) is shared, so a file that changes the stack
 * itself, restarts it or needs other settings starts its own with `startRunlet`.
 *
 * A stack left running idles at about 2.6 s of CPU a minute (esbuild's watch of the Worker's
 * sources, the components' heartbeats), so it stops once no file has used it for `IDLE_MS`;
 * vitest.config.ts runs the files that share it one after the other. It also stops with the
 * test process (it is supervised by it: harness.ts); its home, left then, is removed by the next
 * shared stack's start.
 */
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isAlive, json, type Runlet, removeHome, startRunlet } from "./harness.ts";

/** A shared stack's home: this prefix, then the pid of the test process that started it. */
const PREFIX = "runlet-shared-";

/** How long the stack waits for the next file before it stops. */
const IDLE_MS = 30_000;

let shared: Promise<Runlet> | undefined;
let users = 0;
let idle: NodeJS.Timeout | undefined;

/**
 * The shared stack, seen through a new project named `name` (owned by the local owner, whose
 * token `local.token` is). `env` names the project for the CLI (`RUNLET_PROJECT`). `stop` only
 * says the file is done with it.
 */
export async function sharedRunlet(name: string): Promise<Runlet> {
  clearTimeout(idle);
  users++;
  shared ??= sweepLeftHomes()
    .then(() => mkdtemp(join(tmpdir(), `${PREFIX}${process.pid}-`)))
    .then((home) => startRunlet(home));
  const stack = await shared;
  const { baseUrl, token } = stack.local;
  const res = await fetch(`${baseUrl}/v2/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name }),
  });
  const project = await json(res);
  if (res.status !== 201)
    throw new Error(`a project for ${name}: ${res.status} ${project.message}`);
  return {
    ...stack,
    local: { ...stack.local, projectId: project.id },
    env: { ...stack.env, RUNLET_PROJECT: project.id },
    stop: async () => {
      if (--users === 0) idle = setTimeout(() => void stopShared(), IDLE_MS).unref();
      return null;
    },
  };
}

async function stopShared(): Promise<void> {
  const stopping = shared;
  shared = undefined;
  const stack = await stopping;
  if (!stack) return;
  await stack.stop();
  await removeHome(stack.home);
}

/**
 * Removes the homes of shared stacks whose test process ended before their idle stop (a run of a
 * few files), once the stack in each has stopped too (no live pid in its runlet.pid).
 */
async function sweepLeftHomes(): Promise<void> {
  for (const name of await readdir(tmpdir())) {
    if (!name.startsWith(PREFIX) || isAlive(Number(name.slice(PREFIX.length).split("-")[0])))
      continue;
    const home = join(tmpdir(), name);
    const held = await readFile(join(home, "runlet.pid"), "utf8").catch(() => "");
    const pid = Number(held.split("\n")[0]);
    if (!(pid > 0 && isAlive(pid))) await removeHome(home);
  }
}
