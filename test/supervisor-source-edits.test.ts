import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, sleep, sleeper } from "./apps.ts";
import { newHome, ROOT, type Runlet, removeHome, startRunlet } from "./harness.ts";
import { pidOf, serving, until, workerdPids } from "./supervision.ts";

// Issue 12, the one case that saves the Worker's source under a running stack: every stack of
// this checkout reloads then, so this file runs alone, after all others (vitest.config.ts,
// `node-source-edits`). The rest of the supervisor's cases are in supervisor.test.ts, which
// runs beside the others.

const APP = sleeper(['name = "echo"', 'runtime = "managed"']);

describe("runlet start supervises its components", () => {
  let home: string;
  let stack: Runlet;

  beforeAll(async () => {
    home = await newHome();
    stack = await startRunlet(home);
    await client(stack).deploy(APP);
  });

  afterAll(async () => {
    await stack?.stop();
    if (home) await removeHome(home);
  });

  it("keeps the worker when its code changes under it (wrangler reloads it on a new workerd)", async () => {
    const file = join(ROOT, "worker", "index.ts");
    const source = readFileSync(file, "utf8");
    const restarts = () => stack.output().split("the worker exited unexpectedly").length;
    const before = restarts();
    const worker = pidOf(stack, "worker");
    const workerd = workerdPids(stack);
    try {
      // A save, a git pull: the worker was killed as if its workerd had died, and restarted.
      writeFileSync(file, `${source}\n// saved while runlet start runs\n`);
      await until(
        "the Worker reloaded on a new workerd",
        () => workerdPids(stack).some((pid) => !workerd.includes(pid)) || undefined,
        30_000,
      );
    } finally {
      writeFileSync(file, source);
    }
    await sleep(3_000); // the watch looks every second; the file put back reloads it again
    await serving(stack, "echo", 30_000);
    expect(restarts()).toBe(before);
    expect(pidOf(stack, "worker")).toBe(worker);
  }, 90_000);
});
