import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MAX_BUNDLE_BYTES, MAX_BUNDLE_FILES } from "../../common/app-limits.ts";
import { ENV } from "../../common/consts.ts";
import { collect, packagesNote } from "./deploy.ts";
import { runlet } from "./test-support.ts";

it("says at deploy that a Python app's requirements.txt is not installed, and what to do", () => {
  const note = packagesNote(["runlet.toml", "server.py", "requirements.txt"]);
  expect(note).toMatch(/^Note: requirements.txt is uploaded but not installed/);
  expect(note).toMatch(/pip install -r requirements.txt --target vendor/);
  expect(packagesNote(["pyproject.toml", "Pipfile"])).toMatch(/pyproject.toml, Pipfile are/);
  // Only the bundle's top folder: a package's own files inside a vendored folder are not lists.
  expect(packagesNote(["runlet.toml", "server.py", "vendor/pkg/setup.py"])).toBeUndefined();
});

describe("the files a deploy uploads, when the folder holds symbolic links", () => {
  let root: string;
  beforeEach(async () => {
    root = await realpath(await mkdtemp(join(tmpdir(), "runlet-deploy-links-")));
    await mkdir(join(root, "app", "lib"), { recursive: true });
    await writeFile(join(root, "app", "runlet.toml"), 'name = "linked"\n');
    await writeFile(join(root, "app", "lib", "shared.js"), "export const x = 1;\n");
    await writeFile(join(root, "secret.txt"), "not for upload\n");
  });
  afterEach(() => rm(root, { recursive: true, force: true }));
  const paths = (files: { path: string }[]) => files.map((f) => f.path).sort();

  it("follows a link to a file or a folder inside the app folder, at the link's path", async () => {
    const app = join(root, "app");
    await symlink("lib/shared.js", join(app, "index.js"));
    await symlink("lib", join(app, "vendor"));
    const { files, notes } = await collect(app);
    expect(paths(files)).toEqual(["index.js", "lib/shared.js", "runlet.toml", "vendor/shared.js"]);
    const index = files.find((f) => f.path === "index.js");
    expect(Buffer.from(index?.contentBase64 ?? "", "base64").toString()).toBe(
      "export const x = 1;\n",
    );
    expect(notes).toEqual([]);
  });

  it("leaves .env files out, saying so, and keeps their examples", async () => {
    const app = join(root, "app");
    for (const name of [".env", ".env.local", "lib/.env.production", ".env.example", "env.js"])
      await writeFile(join(app, name), "DB_PASSWORD=supersecret\n");
    const { files, notes } = await collect(app);
    // They were uploaded into every version's bundle, readable by the app.
    expect(paths(files)).toEqual([".env.example", "env.js", "lib/shared.js", "runlet.toml"]);
    expect(notes.map((n) => n.split(":")[0]).sort()).toEqual([
      "Skipped .env",
      "Skipped .env.local",
      "Skipped lib/.env.production",
    ]);
    expect(notes.every((n) => n.includes("runlet secrets set NAME"))).toBe(true);
  });

  it("refuses a link out of the app folder, or into its .runlet, before anything is sent", async () => {
    const app = join(root, "app");
    await symlink("../secret.txt", join(app, "config.txt"));
    await expect(collect(app)).rejects.toThrow(
      `config.txt is a symbolic link to ${join(root, "secret.txt")}, outside the app folder ${app}: nothing was uploaded.`,
    );
    await rm(join(app, "config.txt"));
    await mkdir(join(app, ".runlet"));
    await writeFile(join(app, ".runlet", "local.json"), "{}");
    await symlink(".runlet/local.json", join(app, "creds.json"));
    await expect(collect(app)).rejects.toThrow(
      /^creds.json is a symbolic link to .*local.json, in .runlet, which a deploy never uploads: nothing was uploaded/,
    );
  });

  it("skips, with a note, a link to nothing and a link to a folder it is inside of", async () => {
    const app = join(root, "app");
    await symlink("gone.js", join(app, ".#index.js"));
    await symlink("..", join(app, "lib", "up"));
    const { files, notes } = await collect(app);
    expect(paths(files)).toEqual(["lib/shared.js", "runlet.toml"]);
    expect(notes.sort()).toEqual([
      "Skipped .#index.js: a symbolic link to gone.js, which is not there.",
      "Skipped lib/up: a symbolic link to a folder it is inside of.",
    ]);
  });
});

it("says where runlet.toml stops being TOML, line and column, before anything is sent", async () => {
  const root = await realpath(await mkdtemp(join(tmpdir(), "runlet-deploy-toml-")));
  try {
    // A string left open: the parser's first line named no line, and then (until 2026-11-27)
    // blamed "control characters are not allowed in strings".
    await writeFile(join(root, "runlet.toml"), 'runtime = "managed"\nname = "hello\n');
    const open = await runlet(["deploy", root], { RUNLET_HOME: join(root, "none") });
    expect(open.code).toBe(1);
    expect(open.stderr).toBe(
      "runlet deploy: runlet.toml is not valid TOML: a string is not closed before the end of its line: add its closing quote (line 2, column 14)",
    );
    // A word without quotes was an "invalid value", and no more.
    await writeFile(join(root, "runlet.toml"), 'name = "hello"\nruntime = managed\n');
    const bare = await runlet(["deploy", root], { RUNLET_HOME: join(root, "none") });
    expect([bare.code, bare.stderr]).toEqual([
      1,
      'runlet deploy: runlet.toml is not valid TOML: invalid value: a string needs quotes (runtime = "managed") (line 2, column 11)',
    ]);
    await writeFile(join(root, "runlet.toml"), 'name = "hello"\nresponse_grace_period = 10s\n');
    const unit = await runlet(["deploy", root], { RUNLET_HOME: join(root, "none") });
    expect(unit.stderr).toBe(
      "runlet deploy: runlet.toml is not valid TOML: illegal character in numeric literal (line 2, column 27)",
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

it("says when the folder given is not there, or is a file, rather than that it lacks a runlet.toml", async () => {
  const root = await realpath(await mkdtemp(join(tmpdir(), "runlet-deploy-where-")));
  try {
    const env = { RUNLET_HOME: join(root, "none") };
    const missing = await runlet(["deploy", join(root, "apps", "nodef")], env);
    expect([missing.code, missing.stderr]).toEqual([
      1,
      `runlet deploy: there is no folder ${join(root, "apps", "nodef")}: nothing was uploaded`,
    ]);
    await writeFile(join(root, "main.mjs"), "export const run = () => 1;\n");
    const file = await runlet(["deploy", join(root, "main.mjs")], env);
    expect(file.stderr).toMatch(/main\.mjs is a file: give the app's folder/);
    const bare = await runlet(["deploy", root], env);
    expect(bare.stderr).toMatch(/has no runlet\.toml: is it an app folder\?$/);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

it("refuses a runlet.toml the control plane would refuse, before packing or sending anything", async () => {
  const root = await realpath(await mkdtemp(join(tmpdir(), "runlet-deploy-config-")));
  try {
    // No control plane, no credentials: the check comes before either is needed. It said
    // "Packing…", "Starting a replica of the new version of bad…", then the control plane's 400.
    const env = { RUNLET_HOME: join(root, "none") };
    await writeFile(join(root, "server.py"), "print('hi')\n");
    await writeFile(join(root, "runlet.toml"), 'name = "bad"\nruntime = "python"\n');
    const python = await runlet(["deploy", root], env);
    expect([python.code, python.stdout, python.stderr]).toEqual([
      1,
      "",
      'runlet deploy: runlet.toml: runtime: must be "managed" or "custom", not "python": a Python app, or any HTTP server of your own, is "custom", with a [custom] entrypoint such as ["python3", "server.py"]: nothing was uploaded. Fix it (the control plane refuses it too).',
    ]);
    await writeFile(join(root, "runlet.toml"), 'name = "bad"\ntimeout = 600\n');
    const timeout = await runlet(["deploy", root, "--json"], env);
    expect(JSON.parse(timeout.stdout)).toEqual({
      message:
        "runlet.toml: unknown field 'timeout' (did you mean response_grace_period (seconds an async run may take)?): nothing was uploaded. Fix it (the control plane refuses it too).",
    });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

it("says how to call a function the app exports: run if it does, else its first", async () => {
  // The hint said `runlet run nodefn --data '{}'` and `POST …/nodefn/run`, both a 404 for a
  // module that exports only handler and resize, which the start check had found.
  const root = await realpath(await mkdtemp(join(tmpdir(), "runlet-deploy-hint-")));
  await writeFile(join(root, "runlet.toml"), 'name = "nodefn"\n');
  await writeFile(join(root, "main.mjs"), "export const handler = () => 1;\n");
  let exports: string[] | undefined;
  const server = createServer((_req, res) => {
    res.writeHead(201, { "content-type": "application/json" });
    const started = { host: "hst_1", ms: 80, ...(exports ? { exports } : {}) };
    const app = { id: "app_1", name: "nodefn", runtime: "managed", version: 1, files: 2 };
    res.end(JSON.stringify({ ...app, bytes: 50, deployedAt: "2026-11-27T00:00:00.000Z", started }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  const hint = async () => {
    const deployed = await runlet(["deploy", root], env);
    expect(deployed.code, deployed.stderr).toBe(0);
    return deployed.stderr.split("\n").slice(-2);
  };
  try {
    exports = ["handler", "resize"];
    expect(await hint()).toEqual([
      "Call it: npx runlet run nodefn handler --data '{}'",
      `     or: POST ${url}/v4/prj_1/nodefn/handler`,
    ]);
    const run = [
      "Call it: npx runlet run nodefn --data '{}'",
      `     or: POST ${url}/v4/prj_1/nodefn/run`,
    ];
    exports = ["handler", "run"];
    expect(await hint()).toEqual(run);
    // Not known (a runtime host older than the field): run, the default function.
    exports = undefined;
    expect(await hint()).toEqual(run);
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await rm(root, { recursive: true, force: true });
  }
});

it("refuses a folder past the bundle limit before uploading, naming its size, the limit and its largest files", async () => {
  // It was uploaded whole, after "Starting a replica…", and came back as the control plane's 413.
  const root = await realpath(await mkdtemp(join(tmpdir(), "runlet-deploy-size-")));
  await writeFile(join(root, "runlet.toml"), 'name = "big"\n');
  await writeFile(join(root, "main.mjs"), "export const run = () => 1;\n");
  await writeFile(join(root, "model.bin"), Buffer.alloc(MAX_BUNDLE_BYTES - 1024 * 1024));
  await writeFile(join(root, "weights.bin"), Buffer.alloc(2 * 1024 * 1024));
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.writeHead(413, { "content-type": "application/json" }).end('{"message":"too large"}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    const done = await runlet(["deploy", root], env);
    expect(done.code).toBe(1);
    expect(done.stderr).toBe(
      "runlet deploy: the folder is 21.0 MiB, more than the 20.0 MiB a deploy takes: nothing was uploaded. Its largest files: model.bin (19.0 MiB), weights.bin (2.0 MiB). Move what the app does not need out of the folder.",
    );
    expect(requests).toBe(0);
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await rm(root, { recursive: true, force: true });
  }
});

it("refuses a folder of more files than a bundle holds before packing it, naming the count, the limit and its fullest folders", async () => {
  // It was read, packed and uploaded, then refused by the control plane.
  const root = await realpath(await mkdtemp(join(tmpdir(), "runlet-deploy-count-")));
  await writeFile(join(root, "runlet.toml"), 'name = "many"\n');
  await writeFile(join(root, "main.mjs"), "export const run = () => 1;\n");
  await mkdir(join(root, "node_modules"));
  await mkdir(join(root, "data"));
  const paths = [
    ...Array.from({ length: MAX_BUNDLE_FILES - 10 }, (_, i) => join("node_modules", `m${i}.js`)),
    ...Array.from({ length: 10 }, (_, i) => join("data", `d${i}.json`)),
  ];
  // 200 at a time: all at once could run out of file descriptors.
  for (let i = 0; i < paths.length; i += 200)
    await Promise.all(paths.slice(i, i + 200).map((p) => writeFile(join(root, p), "")));
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.writeHead(400, { "content-type": "application/json" }).end('{"message":"too many"}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    const done = await runlet(["deploy", root], env);
    expect(done.code).toBe(1);
    expect(done.stderr).toBe(
      "runlet deploy: the folder has 5,002 files, more than the 5,000 a deploy takes: nothing was packed or uploaded. The folders with the most: node_modules/ (4,990), data/ (10). Move what the app does not need out of the folder.",
    );
    expect(requests).toBe(0);
    // At the limit, it is packed.
    await rm(join(root, "data", "d0.json"));
    await rm(join(root, "data", "d1.json"));
    expect((await collect(root)).files).toHaveLength(MAX_BUNDLE_FILES);
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await rm(root, { recursive: true, force: true });
  }
});

it("says, while the new version's replica starts, that the wait is for it, not for Runlet", async () => {
  // The note said "(deploy: still waiting for http://127.0.0.1:8080, 3 s)", which read as a
  // control plane that does not answer, while it was waiting for the replica's start.
  const root = await realpath(await mkdtemp(join(tmpdir(), "runlet-deploy-wait-")));
  await writeFile(join(root, "runlet.toml"), 'name = "slowstart"\n');
  await writeFile(join(root, "main.mjs"), "export const run = () => 1;\n");
  const server = createServer((_req, res) => {
    setTimeout(() => {
      res.writeHead(201, { "content-type": "application/json" });
      const app = { id: "app_1", name: "slowstart", runtime: "managed", version: 1, files: 2 };
      const started = { host: "hst_1", ms: 3_400 };
      res.end(
        JSON.stringify({ ...app, bytes: 50, deployedAt: "2026-11-27T00:00:00.000Z", started }),
      );
    }, 3_500);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    const deployed = await runlet(["deploy", root], env);
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.progress).toMatch(
      /\(deploy: still waiting for the version's replica to start on a runtime host \(the control plane answers once it has\), 3 s\)/,
    );
    // Without the start check the answer waits on nothing but the control plane: named as before.
    const unchecked = await runlet(["deploy", root, "--no-start-check"], env);
    expect(unchecked.code, unchecked.stderr).toBe(0);
    expect(unchecked.progress).toContain(`(deploy: still waiting for ${url}, 3 s)`);
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await rm(root, { recursive: true, force: true });
  }
});
