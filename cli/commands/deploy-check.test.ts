// `runlet deploy` checks that the app's code parses before it uploads anything, against a real
// Node control plane: a main.mjs with a SyntaxError was accepted (201) and replaced the working
// version, and every call was then a 502 "the app failed to start: SyntaxError …".
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runlet as cli, type FirstUser, withFirstUser } from "./test-support.ts";

let first: FirstUser;
let apps: string;
const runlet = (args: string[], more: Record<string, string | undefined> = {}) =>
  cli(args, { ...first.env, ...more });
/**
 * `runlet deploy`, without the control plane's start check: no runtime host runs beside this
 * control plane (the check refuses what these apps do at their start: test/deploy-check.test.ts).
 */
const deploy = (args: string[], more: Record<string, string | undefined> = {}) =>
  runlet(["deploy", ...args, "--no-start-check"], more);

beforeAll(async () => {
  first = await withFirstUser("deploy-check", "first");
  apps = await mkdtemp(join(tmpdir(), "runlet-deploy-check-apps-"));
});

afterAll(async () => {
  await first?.stop();
  if (apps) await rm(apps, { recursive: true, force: true });
});

/** Writes an app folder of `files` under `apps`; its path. */
async function app(folder: string, files: Record<string, string>): Promise<string> {
  const dir = join(apps, folder);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(dir, path, ".."), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

/** The app's live version, or undefined when it was never deployed. */
async function liveVersion(name: string): Promise<number | undefined> {
  const listed = await runlet(["apps", "--json"]);
  const found = (JSON.parse(listed.stdout).apps as { name: string; version: number }[]).find(
    (a) => a.name === name,
  );
  return found?.version;
}

const hasPython = (() => {
  try {
    execFileSync("python3", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

describe("runlet deploy checks the syntax first", () => {
  it("refuses a main.mjs that does not parse, naming file and line, and keeps the live version", async () => {
    const good = await app("typo", {
      "runlet.toml": 'name = "typo"\n',
      "main.mjs": "export function run() {\n  return 1;\n}\n",
    });
    const deployed = await deploy([good, "--json"]);
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(await liveVersion("typo")).toBe(1);

    await writeFile(join(good, "main.mjs"), "export function run( {\n  return 1;\n}\n");
    const refused = await deploy([good, "--json"]);
    expect(refused.code).toBe(1);
    const { message } = JSON.parse(refused.stdout);
    expect(message).toMatch(
      /^main\.mjs:2: SyntaxError: Unexpected number \(node --check\): nothing was uploaded/,
    );
    expect(message).toContain("--no-check");
    expect(await liveVersion("typo")).toBe(1);

    // A person is shown Node's excerpt of the line too.
    const shown = await deploy([good]);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toBe("");
    expect(shown.stderr).toMatch(/^main\.mjs:2\n {2}return 1;\n\s+\^/m);
    expect(shown.stderr).toContain("runlet deploy: main.mjs:2: SyntaxError");
    expect(await liveVersion("typo")).toBe(1);

    // --no-check uploads it all the same.
    const forced = await deploy([good, "--no-check", "--json"]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(await liveVersion("typo")).toBe(2);
    const help = await runlet(["deploy", "--help"]);
    expect(help.stdout).toMatch(/^ {2}--no-check {9}upload without those checks/m);
  });

  it("checks the other .js/.cjs files but not node_modules, and not what only a run shows", async () => {
    const dir = await app("libs", {
      "runlet.toml": 'name = "libs"\n',
      // A missing package parses: the syntax check lets it by (a replica's start sees it).
      "main.mjs": 'import x from "not-installed";\nexport const run = () => x;\n',
      "lib/ok.cjs": "return module.exports;\n",
      "lib/bad.js": "const = 1;\n",
      "node_modules/pkg/broken.js": "this is not javascript\n",
    });
    const refused = await deploy([dir, "--json"]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).message).toMatch(/^lib\/bad\.js:1: SyntaxError: /);
    expect(await liveVersion("libs")).toBeUndefined();

    await writeFile(join(dir, "lib/bad.js"), "export const one = 1;\n");
    const deployed = await deploy([dir, "--json"]);
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(await liveVersion("libs")).toBe(1);
  });

  it.skipIf(!hasPython)(
    "refuses a Python app's server.py that does not parse, leaving no bytecode in the folder",
    async () => {
      const dir = await app("py", {
        "runlet.toml":
          'name = "py"\nruntime = "custom"\n[custom]\nentrypoint = ["python3", "server.py"]\n',
        "server.py": "import sys\n\ndef handler(:\n    pass\n",
      });
      const refused = await deploy([dir, "--json"]);
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout).message).toMatch(
        /^server\.py:3: SyntaxError: .* \(python3 -m py_compile\): nothing was uploaded/,
      );
      expect(await liveVersion("py")).toBeUndefined();
      expect((await readdir(dir)).sort()).toEqual(["runlet.toml", "server.py"]);

      // Without python3 on PATH, the deploy goes on, and says the files were not checked.
      const noPython = await mkdtemp(join(tmpdir(), "runlet-no-python-"));
      const unchecked = await deploy([dir, "--json"], { PATH: noPython });
      await rm(noPython, { recursive: true, force: true });
      expect(unchecked.code, unchecked.stderr).toBe(0);
      expect(unchecked.stderr).toContain("python3 is not on PATH");
      expect(await liveVersion("py")).toBe(1);
    },
  );

  it("does not check a custom app run by a program of its own", async () => {
    const dir = await app("own", {
      "runlet.toml": 'name = "own"\nruntime = "custom"\n[custom]\nentrypoint = ["./start.sh"]\n',
      "start.sh": "#!/bin/sh\nexec ./server\n",
      "tools/gen.js": "not javascript at all\n",
    });
    const deployed = await deploy([dir, "--json"]);
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(await liveVersion("own")).toBe(1);
  });
});

describe("runlet deploy checks a managed app's entry first", () => {
  it("refuses a folder without main.js or main.mjs before it packs or sends anything, --no-check too", async () => {
    const dir = await app("tsonly", {
      "runlet.toml": 'name = "tsonly"\n',
      "main.ts": "export function run(): number {\n  return 1;\n}\n",
    });
    for (const args of [[dir], [dir, "--no-check"]]) {
      const refused = await deploy(args);
      expect([refused.code, refused.stdout]).toEqual([1, ""]);
      expect(refused.stderr).toContain(
        "runlet deploy: a managed-runtime app needs main.js or main.mjs at its root: Runlet runs JavaScript, so compile main.ts to main.mjs first",
      );
      expect(refused.stderr).toMatch(/: nothing was uploaded$/m);
      // It was packed and sent: "Packing tsonly", "Deploying to project …", then the 400.
      expect(refused.stderr).not.toContain("Packing");
      expect(refused.stderr).not.toContain("Deploying to project");
    }
    const json = await deploy([dir, "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      message: expect.stringMatching(/^a managed-runtime app needs main\.js or main\.mjs/),
    });
    // Nothing reached the control plane: no refused deploy in the audit log.
    const audit = await runlet(["audit-log", "--action", "apps.deploy", "--json"]);
    const targets = (JSON.parse(audit.stdout).logs as { target: { id: string } }[]).map(
      (e) => e.target.id,
    );
    expect(targets).not.toContain("tsonly");
    expect(await liveVersion("tsonly")).toBeUndefined();
  });
});
