// A deploy starts a replica of the new version before it makes it live, on a whole local Runlet
// (`runlet start`) through the CLI. An app whose module failed when it was loaded (a package not
// in the bundle, a name a module does not export, a Python ImportError, a custom command that
// exits at once) was recorded as the current version all the same: the working version stopped
// answering, and every call failed until the next deploy. Now the deploy is refused with the
// app's own error, and the version before keeps serving.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppFolders, appFolders } from "./app-folders.ts";
import { cli, type Json, type Runlet } from "./harness.ts";
import { sharedRunlet } from "./shared-stack.ts";

const hasPython = spawnSync("python3", ["--version"]).status === 0;

describe("runlet deploy starts a replica of the version before it goes live", () => {
  let runlet: Runlet;
  let apps: AppFolders;

  beforeAll(async () => {
    apps = await appFolders("deploy-start");
    runlet = await sharedRunlet("deploy-check");
  });

  afterAll(async () => {
    await runlet?.stop();
    await apps?.remove();
  });

  const app = (name: string, files: Record<string, string>, toml = "") =>
    apps.write(name, files, toml);
  const deploy = (dir: string, ...flags: string[]) => cli(["deploy", dir, ...flags], runlet.env);
  /** A call of the app's `run` through the run API: its status and body. */
  const run = async (name: string) => {
    const { apiUrl, projectId, token } = runlet.local;
    const res = await fetch(`${apiUrl}/v4/${projectId}/${name}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: "{}",
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const live = async (name: string) => {
    const listed = await cli(["apps", "--json"], runlet.env);
    return (JSON.parse(listed.stdout).apps as Json[]).find((a) => a.name === name)?.version;
  };
  const v1 = { "main.mjs": "export const run = () => 'v1';\n" };

  it("refuses a Node app that imports a package not in its folder, quoting the error; v1 answers on", async () => {
    expect((await deploy(await app("pkg", v1))).code).toBe(0);
    const refused = await deploy(
      await app("pkg", {
        "main.mjs": 'import pad from "left-pad";\nexport const run = () => pad("1", 2);\n',
      }),
    );
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain(
      "Starting a replica of the new version of pkg on a runtime host before it goes live…",
    );
    expect(refused.stderr).toMatch(
      /runlet deploy: deploy failed \(422\): version 2 of 'pkg' was not deployed \(version 1 still answers\): the app failed to start: Cannot find package 'left-pad' imported from /,
    );
    expect(await run("pkg")).toMatchObject({ status: 200, body: { result: "v1" } });
    expect(await live("pkg")).toBe(1);
  });

  it("refuses a module that imports a name another does not export", async () => {
    expect((await deploy(await app("named", v1))).code).toBe(0);
    const refused = await deploy(
      await app("named", {
        "main.mjs": 'import { handler } from "./lib.mjs";\nexport const run = handler;\n',
        "lib.mjs": "export const other = () => 2;\n",
      }),
      "--json",
    );
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      status: 422,
      code: "unprocessable",
      message:
        "deploy failed (422): version 2 of 'named' was not deployed (version 1 still answers): the app failed to start: SyntaxError: The requested module './lib.mjs' does not provide an export named 'handler' (./main.mjs:1)",
    });
    expect(await run("named")).toMatchObject({ status: 200, body: { result: "v1" } });
  });

  it("refuses a Node app whose module exports no function (each call of it would be a 404), unless unchecked", async () => {
    expect((await deploy(await app("bare", v1))).code).toBe(0);
    const dir = await app("bare", {
      "main.mjs": "console.log('loading v2');\nexport const version = 2;\n",
    });
    const refused = await deploy(dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "runlet deploy: deploy failed (422): version 2 of 'bare' was not deployed (version 1 still answers): the app exports no function: its module loaded, but a call runs a function it exports (export function run(input, ctx) {…} in main.mjs, exports.run = … in main.js)\nits last output, on runtime host ",
    );
    expect(refused.stderr).toContain("  stdout | loading v2");
    expect(await run("bare")).toMatchObject({ status: 200, body: { result: "v1" } });
    expect(await live("bare")).toBe(1);
    const audited = await cli(["audit-log", "--action", "apps.deploy", "--json"], runlet.env);
    expect(JSON.parse(audited.stdout).logs[0]).toMatchObject({
      outcome: "failure",
      target: { type: "app", id: "bare" },
      metadata: { status: 422 },
    });
    // The user's call: made current unchecked, its calls are the 404 the check spared them.
    expect((await deploy(dir, "--no-start-check")).code).toBe(0);
    expect(await run("bare")).toMatchObject({
      status: 404,
      body: { message: "app 'bare' has no function 'run' (it exports no function)" },
    });
  });

  it.skipIf(!hasPython)(
    "refuses a Python app whose import fails, quoting its traceback",
    async () => {
      const toml = 'runtime = "custom"\n[custom]\nentrypoint = ["python3", "server.py"]\n';
      const refused = await deploy(
        await app("py", { "server.py": "import requests\nprint('serving')\n" }, toml),
      );
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        "version 1 of 'py' was not deployed (the app was not created): the app failed to start: its process exited before it was healthy (code 1): ModuleNotFoundError: No module named 'requests'",
      );
      expect(refused.stderr).toMatch(
        /its last output, on runtime host hst_\w+:\n {2}stderr \| Traceback \(most recent call last\):\n(.*\n)* {2}stderr \| ModuleNotFoundError: No module named 'requests'/,
      );
      expect(await live("py")).toBeUndefined();
    },
  );

  it("refuses a custom app whose command exits at once, quoting what it wrote", async () => {
    const toml = 'runtime = "custom"\n[custom]\nentrypoint = ["sh", "start.sh"]\n';
    const refused = await deploy(
      await app(
        "quits",
        { "start.sh": "echo reading config.yaml\necho 'config.yaml: no such file' >&2\nexit 1\n" },
        toml,
      ),
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "(the app was not created): the app failed to start: its process exited before it was healthy (code 1): config.yaml: no such file\nits last output, on runtime host ",
    );
    expect(refused.stderr).toContain(
      "  stdout | reading config.yaml\n  stderr | config.yaml: no such file",
    );
    // Nothing of it stays in the control plane's home (an empty folder of the app did).
    expect(existsSync(join(runlet.home, "bundles", runlet.local.projectId, "quits"))).toBe(false);
  });

  it("serves a good version's first call on the replica the deploy started", async () => {
    const dir = await app("warm", {
      "main.mjs": "const loadedAt = Date.now();\nexport const run = () => loadedAt;\n",
    });
    const deployed = await deploy(dir);
    const deployEnded = Date.now();
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.stderr).toMatch(
      /Its replica started in \d+ ms \(runtime host hst_\w+\) and takes its first call\./,
    );
    // The app's replicas say so (they said "0 idle … on hosts: none now").
    const shown = await cli(["apps", "show", "warm"], runlet.env);
    expect(shown.stdout).toMatch(/^ {2}replicas now +0 starting, 1 idle, 0 busy;/m);
    expect(shown.stdout).toMatch(/^ {2}on hosts +local-1 \(1, 0 busy, up\)$/m);
    // Its module was loaded while the deploy ran: no second cold start after it.
    const first = await run("warm");
    expect(first.status).toBe(200);
    expect(first.body.result).toBeLessThan(deployEnded);
  });

  it("makes a version live unchecked with --no-start-check: its calls then fail as before", async () => {
    const dir = await app("unchecked", {
      "main.mjs": 'import "left-pad";\nexport const run = () => 1;\n',
    });
    const deployed = await deploy(dir, "--no-start-check");
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.stderr).toContain(
      "Not started first (--no-start-check): if v1 cannot start, its calls fail until the next deploy.",
    );
    const call = await run("unchecked");
    expect(call.status).toBe(502);
    expect(call.body.message).toMatch(/^the app failed to start: Cannot find package 'left-pad'/);
    const help = await cli(["deploy", "--help"], runlet.env);
    expect(help.stdout).toMatch(/^ {2}--no-start-check {3}make the version live without starting/m);
  });
});
