/**
 * The control plane as docs/deploy.md deploys it on Workers, run here the way `wrangler dev --env
 * control-plane` runs it: the Worker `control-plane/worker.ts` bundled by wrangler, in workerd,
 * its D1 made by `wrangler d1 migrations apply --local`, its R2 bucket local, its secrets as
 * `wrangler secret put` gives them. The shared test cases (`control-plane-d1`) import the app
 * inside a test; only this evaluates the Worker's modules as Cloudflare does, at its start, and
 * only this keeps bundles in R2 through the Worker.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { unstable_readConfig, unstable_startWorker } from "wrangler";
import { freePort } from "../cli/processes.ts";
import { digestOfBundle } from "../common/bundle-digest.ts";
import { generateSigningKey } from "../common/jwt.ts";
import { ROOT } from "./harness.ts";

const CONFIG = join(ROOT, "wrangler.toml");
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const BOOTSTRAP = "bootstrap-token-of-this-test-0123456789abcdef";
const INTERNAL = "internal-token-of-this-test-0123456789abcdef";

let dir: string;
let worker: Awaited<ReturnType<typeof unstable_startWorker>> | undefined;
let base: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "runlet-cp-workers-"));
  // docs/deploy.md, step 1, on the local D1 that `wrangler dev --persist-to` reads.
  await promisify(execFile)(
    process.execPath,
    [WRANGLER, "d1", "migrations", "apply", "runlet-control-plane"].concat([
      "--env",
      "control-plane",
      "--local",
      "--persist-to",
      dir,
    ]),
    { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" } },
  );
  const port = await freePort();
  const secret = (value: string) => ({ type: "secret_text" as const, value });
  worker = await unstable_startWorker({
    config: CONFIG,
    env: "control-plane",
    bindings: {
      SIGNING_KEY: secret(JSON.stringify(await generateSigningKey())),
      MASTER_SECRET: secret("dGVzdC1tYXN0ZXItc2VjcmV0LW9mLWF0LWxlYXN0LTMyLWJ5dGVz"),
      INTERNAL_TOKEN: secret(INTERNAL),
      BOOTSTRAP_TOKEN: secret(BOOTSTRAP),
    },
    dev: {
      inspector: false,
      server: { hostname: "127.0.0.1", port },
      persist: dir,
      // Its own registry, where no run Worker is: `RUN_API` answers 503 (the dashboard's run
      // pages only, not called here), never another checkout's `runlet` under wrangler dev.
      registry: join(dir, "registry"),
      logLevel: "error",
      watch: false,
    },
  });
  await worker.ready;
  base = `http://127.0.0.1:${port}`;
}, 120_000);

afterAll(async () => {
  await worker?.dispose();
  await rm(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field.
type Json = any;
async function call(method: string, path: string, token?: string, body?: unknown) {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: "manual",
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: (): Json => JSON.parse(text) };
}

it("deploys with no Durable Object migration: the control plane exports no class", () => {
  // Environments inherit `migrations`: the run Worker's RunShard migrations would go with the
  // control plane's upload, which Cloudflare refuses for a class the script does not export.
  expect(unstable_readConfig({ config: CONFIG, env: "control-plane" }).migrations).toEqual([]);
  expect(
    unstable_readConfig({ config: CONFIG }).migrations.map((m: { tag: string }) => m.tag),
  ).toEqual(["v1", "v2"]);
});

it("says which D1 each `wrangler d1 migrations apply` of the docs acts on", async () => {
  // wrangler 4 applies them to its local copy unless told --remote: a deployment that followed
  // docs/deploy.md had a D1 without tables, and every route failed.
  const files = ["README.md", "docs/deploy.md", "docs/api.md", "wrangler.toml"];
  const commands = [];
  for (const file of files) {
    const text = (await readFile(join(ROOT, file), "utf8")).replace(/\\?\n#?\s*/g, " ");
    for (const [command] of text.matchAll(/d1 migrations apply [^`;(]*/g)) commands.push(command);
  }
  expect(commands.length).toBeGreaterThan(3);
  for (const command of commands) expect(command).toMatch(/--remote|--local/);
});

it("starts in workerd, makes its first user, keeps bundles in R2 and signs in to the dashboard", async () => {
  // Drawing a random value as a module loads (the dashboard's marker did) stopped the Worker
  // from starting at all: "Disallowed operation called within global scope".
  expect((await call("GET", "/healthz")).json()).toEqual({ ok: true, component: "control-plane" });

  const init = await call("POST", "/v2/init", BOOTSTRAP, {
    name: "Ada",
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
  });
  expect(init.status).toBe(201);
  const { token, project } = init.json();

  const files = [
    { path: "runlet.toml", bytes: 'name = "hello"\nruntime = "managed"\n' },
    { path: "main.mjs", bytes: "export const run = () => 'hi';\n" },
  ].map((f) => ({ path: f.path, contentBase64: Buffer.from(f.bytes).toString("base64") }));
  // No runtime host is registered: a deploy cannot start a replica first, and records nothing
  // (503) unless told not to check.
  const unchecked = await call("POST", `/v2/projects/${project.id}/apps`, token, { files });
  expect(unchecked.status).toBe(503);
  expect(unchecked.json().message).toMatch(/no runtime host is up to start a replica of it first/);
  const hostToken = (await call("POST", "/v2/hosts/tokens", token, { name: "h" })).json().token;
  expect((await call("GET", `/internal/bundles/${project.id}/hello`, hostToken)).status).toBe(404);
  for (const _ of [1, 2]) {
    const path = `/v2/projects/${project.id}/apps?startCheck=false`;
    const deployed = await call("POST", path, token, { files });
    expect(deployed.status).toBe(201);
    expect(deployed.json().started).toBeNull();
  }

  // A runtime host fetches the current version and its bundle, as docs/hosts.md says.
  const current = await call("GET", `/internal/bundles/${project.id}/hello`, hostToken);
  expect(current.json()).toMatchObject({ version: 2 });
  const bundle = await call("GET", `/internal/bundles/${project.id}/hello/2`, hostToken);
  expect(bundle.status).toBe(200);
  const kept = bundle.json();
  expect(kept).toMatchObject({ version: 2, config: { name: "hello" } });
  expect(await digestOfBundle(kept.files)).toBe(current.json().digest);

  // The dashboard's pages call the management API in-process, with the marker drawn at first use.
  const link = (await call("POST", `/v2/projects/${project.id}/dashboard-links`, token)).json();
  const signIn = await call("GET", new URL(link.url).pathname + new URL(link.url).search);
  expect(signIn.status).toBe(303);
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const page = await fetch(`${base}/dashboard/apps`, { headers: { cookie } });
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("hello");

  // A project's users and a user's token, on D1 through the Worker (docs/deploy.md).
  const users = `/v2/projects/${project.id}/users`;
  const inDays = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString();
  const ann = (await call("POST", users, token, { name: "Ann", expiresAt: inDays(5) })).json();
  const listed = (await call("GET", users, token)).json().users;
  expect(listed.map((u: Json) => [u.name, u.role])).toEqual([
    ["Ada", "owner"],
    ["Ann", "member"],
  ]);
  expect((await call("PATCH", `${users}/${ann.id}`, token, { role: "owner" })).status).toBe(200);
  const renewed = await call("POST", "/v2/me/token", ann.token, { expiresAt: inDays(9) });
  expect(renewed.status).toBe(201);
  expect((await call("GET", users, ann.token)).status).toBe(401);
  expect((await call("DELETE", `${users}/${ann.id}/token`, token)).status).toBe(204);
  expect((await call("GET", users, renewed.json().token)).status).toBe(401);
  expect((await call("DELETE", `${users}/${ann.id}`, token)).status).toBe(204);
  const last = await call("DELETE", `${users}/${init.json().user.id}`, token);
  expect([last.status, last.json().code]).toEqual([409, "conflict"]);

  // Deleting the app removes its bundles from the bucket.
  expect((await call("DELETE", `/v2/projects/${project.id}/apps/hello`, token)).status).toBe(204);
  expect((await call("GET", `/internal/bundles/${project.id}/hello/2`, hostToken)).status).toBe(
    404,
  );
  expect((await call("GET", `/internal/bundles/${project.id}/hello/1`, hostToken)).status).toBe(
    404,
  );
});
