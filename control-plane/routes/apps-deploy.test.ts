// POST /v2/projects/{id}/apps: what a bundle's files may be. A file name no file system takes is
// refused here, not found out by a runtime host after the deploy; a file of megabytes deploys.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { DeployRequest } from "../../common/protocol/deploy.ts";
import type { memoryBundles } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
});

afterAll(() => f.cleanup());

const b64 = (bytes: string | Buffer) => Buffer.from(bytes).toString("base64");

function deploy(name: string, extra: { path: string; contentBase64: string }) {
  const files = [
    { path: "runlet.toml", contentBase64: b64(`name = "${name}"`) },
    { path: "main.mjs", contentBase64: b64("export const run = () => 1;") },
    extra,
  ];
  return f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
}

async function appNames(): Promise<string[]> {
  const res = await f.call("GET", `/v2/projects/${f.projectId}/apps`);
  return ((await res.json()) as { apps: Array<{ name: string }> }).apps.map((a) => a.name);
}

it("deploys a bundle with a file of 8 MiB", async () => {
  const res = await deploy("big", {
    path: "data.bin",
    contentBase64: b64(Buffer.alloc(8 << 20, 7)),
  });
  expect(res.status, await res.clone().text()).toBe(201);
  expect(await appNames()).toContain("big");
});

it.each([
  ["a control character", "a\u0000b.mjs", "control characters"],
  ["a name over 255 bytes", `${"a".repeat(300)}.txt`, "255 bytes"],
  ["a name over 255 bytes in UTF-8", `dir/${"é".repeat(130)}`, "255 bytes"],
  // One file under two names (the bundle has main.mjs): the host refused it at the first call.
  ["a '.' part", "./main.mjs", "without '.' or '..'"],
  ["a '.' inside", "lib/./util.mjs", "without '.' or '..'"],
  ["only '.'", ".", "without '.' or '..'"],
  ["a '..' part", "../escape.mjs", "without '.' or '..'"],
])("refuses a file path with %s: 400 naming why, nothing deployed", async (_, path, why) => {
  const res = await deploy("odd", { path, contentBase64: b64("x") });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { message: string }).message).toContain(why);
  expect(await appNames()).not.toContain("odd");
});

it("refuses a file where another path needs a folder with 400", async () => {
  const files = [
    { path: "runlet.toml", contentBase64: b64('name = "clash"') },
    { path: "main.mjs", contentBase64: b64("export const run = () => 1;") },
    { path: "lib", contentBase64: b64("x") },
    { path: "lib/util.mjs", contentBase64: b64("x") },
  ];
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { message: string }).message).toContain("'lib' to be a folder");
  expect(await appNames()).not.toContain("clash");
});

it("refuses a managed app without main.mjs, saying to compile a main.ts it has", async () => {
  const refusal = async (name: string, entry: string) => {
    const files = [
      { path: "runlet.toml", contentBase64: b64(`name = "${name}"`) },
      { path: entry, contentBase64: b64("export const run = (): number => 1;") },
    ];
    const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    expect(res.status).toBe(400);
    return ((await res.json()) as { message: string }).message;
  };
  expect(await refusal("typed", "main.ts")).toBe(
    "a managed-runtime app needs main.js or main.mjs at its root: Runlet runs JavaScript, so compile main.ts to main.mjs first (npx esbuild main.ts --bundle --platform=node --format=esm --outfile=main.mjs)",
  );
  expect(await refusal("other", "index.mjs")).toBe(
    "a managed-runtime app needs main.js or main.mjs at its root",
  );
  expect(await appNames()).not.toContain("typed");
});

it("refuses a custom app's entrypoint written as a string, saying how to write it", async () => {
  const toml = 'name = "str"\nruntime = "custom"\n[custom]\nentrypoint = "node server.mjs"\n';
  const files = [{ path: "runlet.toml", contentBase64: b64(toml) }];
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { message: string }).message).toBe(
    'runlet.toml: custom.entrypoint: must be an array: the program and its arguments, such as ["node", "server.mjs"]',
  );
  expect(await appNames()).not.toContain("str");
});

it("refuses a runlet.toml that is not TOML saying where, and an unknown field saying what it meant", async () => {
  const refusal = async (toml: string) => {
    const files = [{ path: "runlet.toml", contentBase64: b64(toml) }];
    const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    expect(res.status).toBe(400);
    return ((await res.json()) as { message: string }).message;
  };
  expect(await refusal('name = "typo\n')).toBe(
    "runlet.toml is not valid TOML: a string is not closed before the end of its line: add its closing quote (line 1, column 13)",
  );
  expect(await refusal('name = "meant"\n[scaling]\nmax_replica = 2\n')).toBe(
    "runlet.toml: scaling: unknown field 'max_replica' (did you mean max_replicas?)",
  );
  expect(await appNames()).not.toContain("meant");
});

it("refuses content that is not padded base64 with 400", async () => {
  for (const contentBase64 of ["abc", "ab$=", "a==="]) {
    const res = await deploy("odd", { path: "x.txt", contentBase64 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain("base64");
  }
});

it("keeps the bundles of an app's newest 10 versions only, and serves the current one", async () => {
  const kept = (f.deps.bundles as ReturnType<typeof memoryBundles>).kept;
  for (let i = 1; i <= 12; i++) {
    const res = await deploy("often", { path: "n.txt", contentBase64: b64(String(i)) });
    expect(res.status, await res.clone().text()).toBe(201);
  }
  const versions = [...kept.keys()]
    .filter((k) => k.includes("/often/"))
    .map((k) => Number(/\/v([0-9]+)-/.exec(k)?.[1])) // v{N}-{digest}
    .sort((a, b) => a - b);
  expect(versions).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  // Its versions' history is the API's still: twelve deploys.
  const listed = await f.call("GET", `/v2/projects/${f.projectId}/apps/often/versions`);
  expect(((await listed.json()) as { versions: unknown[] }).versions).toHaveLength(12);
});

it("forgets an old version's every bundle, one a failed deploy left under another digest too", async () => {
  const bundles = f.deps.bundles as ReturnType<typeof memoryBundles>;
  const often = () => [...bundles.kept.keys()].filter((k) => k.includes("/leftover/"));
  for (let i = 1; i <= 10; i++) {
    const res = await deploy("leftover", { path: "n.txt", contentBase64: b64(String(i)) });
    expect(res.status).toBe(201);
  }
  // What a deploy of version 1 or 2 that failed left behind (its forget failed as well), or
  // what the database does not name: no row records these digests.
  const stray = { version: 1, config: {}, files: [] } as unknown as DeployRequest;
  await bundles.put({ project: f.projectId, app: "leftover", version: 1, digest: "beef" }, stray);
  await bundles.put({ project: f.projectId, app: "leftover", version: 2, digest: "f00d" }, stray);
  for (let i = 11; i <= 12; i++) {
    const res = await deploy("leftover", { path: "n.txt", contentBase64: b64(String(i)) });
    expect(res.status).toBe(201);
  }
  const versions = often().map((k) => Number(/\/v([0-9]+)-/.exec(k)?.[1]));
  expect(versions.sort((a, b) => a - b)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
});

it("audits a deploy its runlet.toml refuses under the app it names, not '(bundle)'", async () => {
  const files = [
    {
      path: "runlet.toml",
      contentBase64: b64('name = "refused"\n[scaling]\nmin_replicas = 5\nmax_replicas = 1\n'),
    },
    { path: "main.mjs", contentBase64: b64("export const run = () => 1;") },
  ];
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(400);
  const log = await f.call(
    "GET",
    `/v2/projects/${f.projectId}/audit-log?action=apps.deploy&outcome=failure`,
  );
  const { logs } = (await log.json()) as {
    logs: Array<{ target: { type: string; id: string }; metadata: { status?: number } }>;
  };
  expect(logs[0]).toMatchObject({
    target: { type: "app", id: "refused" },
    metadata: { status: 400 },
  });
});
