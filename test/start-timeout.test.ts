import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppFolders, appFolders } from "./app-folders.ts";
import { cli, type Json, type Runlet } from "./harness.ts";
import { sharedRunlet } from "./shared-stack.ts";

const SLOW = {
  "main.mjs":
    "await new Promise((r) => setTimeout(r, 3_000)); // loading a model\nexport const run = () => 'loaded';\n",
};

describe("start_timeout in runlet.toml", () => {
  let runlet: Runlet;
  let apps: AppFolders;

  beforeAll(async () => {
    apps = await appFolders("start-timeout");
    runlet = await sharedRunlet("start-timeout");
  });

  afterAll(async () => {
    await runlet?.stop();
    await apps?.remove();
  });

  /** Deploys the app `slow` with `toml` after its name. */
  const deploy = async (toml: string) =>
    cli(["deploy", await apps.write("slow", SLOW, `${toml}\n`)], runlet.env);

  it("refuses out of bounds before uploading, a start past it naming it, and deploys within it", async () => {
    const far = await deploy("start_timeout = 4000");
    expect(far.code).toBe(1);
    expect(far.stderr).toContain(
      "runlet.toml: start_timeout: must be at most 1800: nothing was uploaded",
    );

    const short = await deploy("start_timeout = 1");
    expect(short.code).toBe(1);
    expect(short.stderr).toContain(
      "Starting a replica of the new version of slow on a runtime host before it goes live (start_timeout 1 s)…",
    );
    expect(short.stderr).toMatch(
      /deploy failed \(422\): version 1 of 'slow' was not deployed \(the app was not created\): the app failed to start: it did not load within 1 s, the app's start_timeout \(runlet\.toml\): .*raise start_timeout/,
    );

    const enough = await deploy("start_timeout = 10");
    expect(enough.code, enough.stderr).toBe(0);
    const { apiUrl, projectId, token } = runlet.local;
    const res = await fetch(`${apiUrl}/v4/${projectId}/slow/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: "{}",
    });
    expect([res.status, ((await res.json()) as Json).result]).toEqual([200, "loaded"]);
    const shown = await cli(["apps", "show", "slow"], runlet.env);
    expect(shown.stdout).toMatch(/limits\s+.*, start_timeout 10 s/);
  });
});
