// A project's secrets in its apps' environment, on a whole local Runlet: set with the management
// API, read by a managed and a custom app's code, a change seen by the replicas started after it,
// and a change (`runlet secrets set`, the API) reaching a managed or custom app's warm replicas
// without a redeploy.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client } from "./apps.ts";
import { cli, json, type Runlet } from "./harness.ts";
import { sharedRunlet } from "./shared-stack.ts";

let runlet: Runlet;

beforeAll(async () => {
  runlet = await sharedRunlet("secrets");
}, 120_000);

afterAll(() => runlet?.stop());

async function setSecret(name: string, value: string) {
  const { baseUrl, projectId, token } = runlet.local;
  const res = await fetch(`${baseUrl}/v2/projects/${projectId}/secrets/${name}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ value }),
  });
  expect(res.status).toBe(204);
}

const MANAGED = (tag: string) => ({
  "runlet.toml": 'name = "envy"',
  "main.mjs": `export const run = () => ({ key: process.env.API_KEY ?? null, tag: "${tag}" });`,
});

const CUSTOM = {
  "runlet.toml": [
    'name = "envy-web"',
    'runtime = "custom"',
    "[custom]",
    'entrypoint = ["node", "server.mjs"]',
  ].join("\n"),
  "server.mjs": `import { createServer } from "node:http";
createServer((req, res) => res.end(JSON.stringify({ key: process.env.API_KEY ?? null })))
  .listen(Number(process.env.PORT), "127.0.0.1");`,
};

describe("project secrets", () => {
  it("are in a managed app's environment, and a change reaches the replicas started after it", async () => {
    const apps = client(runlet);
    await setSecret("API_KEY", "first");
    await apps.deploy(MANAGED("v1"));
    const first = await json(await apps.submit("envy", {}));
    expect(first.result).toEqual({ key: "first", tag: "v1" });

    await setSecret("API_KEY", "second");
    await apps.deploy(MANAGED("v2")); // a new version: new replicas
    const second = await json(await apps.submit("envy", {}));
    expect(second.result).toEqual({ key: "second", tag: "v2" });
  });

  it("are in a custom app's environment, and a change reaches its warm replica", async () => {
    await setSecret("API_KEY", "for-the-web");
    await client(runlet).deploy(CUSTOM);
    const { apiUrl, projectId, token } = runlet.local;
    const res = await fetch(`${apiUrl}/v4/${projectId}/envy-web/anything`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ key: "for-the-web" });
    // A change replaces its warm replica too (its server read its environment as it started).
    await setSecret("API_KEY", "rotated");
    const seen: unknown[] = [];
    for (let i = 0; i < 20 && (seen.at(-1) as { key?: string })?.key !== "rotated"; i++) {
      if (i > 0) await sleep(250);
      const again = await fetch(`${apiUrl}/v4/${projectId}/envy-web/anything`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(again.status).toBe(200);
      seen.push(await again.json());
    }
    expect(seen.at(-1)).toEqual({ key: "rotated" });
  });

  it("changed with runlet secrets set, reach the next calls of a warm app, and no call fails or is cut", async () => {
    const apps = client(runlet);
    await setSecret("ROTATED", "first");
    await apps.deploy({
      "runlet.toml": 'name = "rotating"',
      "main.mjs": `const replica = Math.random();
export async function run(input) {
  await new Promise((resolve) => setTimeout(resolve, input?.ms ?? 0));
  return { key: process.env.ROTATED ?? null, replica };
}`,
    });
    const call = async (ms = 0) => {
      const res = await apps.submit("rotating", { ms });
      expect(res.status).toBe(200);
      return (await json(res)).result as { key: string; replica: number };
    };
    // Three warm replicas with the old value (one call each, at once: one call a replica).
    const warm = await Promise.all([call(300), call(300), call(300)]);
    expect(new Set(warm.map((w) => w.replica)).size).toBe(3);
    expect(warm.map((w) => w.key)).toEqual(["first", "first", "first"]);
    // Two of them busy while the secret changes, a sync call and an async run; the third idle.
    const inFlight = call(5_000);
    const queued = await apps.submit("rotating", { ms: 5_000 }, "async=true");
    expect(queued.status).toBe(202);
    const runId = (await json(queued)).run_id as string;
    await apps.viewWhen("rotating", runId, (v) => v.status === "running");
    const { baseUrl, projectId, token } = runlet.local;
    const replicas = async () => {
      const url = `${baseUrl}/v2/projects/${projectId}/apps/rotating/replicas`;
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      return (await json(res)).replicas as { idle: number; busy: number };
    };
    for (let i = 0; i < 50 && (await replicas()).busy < 2; i++) await sleep(100);
    expect(await replicas()).toMatchObject({ idle: 1, busy: 2 });

    const set = await cli(["secrets", "set", "ROTATED", "second"], runlet.env);
    expect(set.code).toBe(0);
    expect(set.stdout).toBe("Stored ROTATED.\n");
    expect(set.stderr).toContain("running replicas that read another value are being replaced");

    // Before, the idle replica kept "first" until its cooldown ended (60 s), whatever came.
    const seen: string[] = [];
    for (let i = 0; i < 40 && seen.at(-1) !== "second"; i++) {
      if (i > 0) await sleep(250);
      seen.push((await call()).key);
    }
    expect(seen.at(-1)).toBe("second");
    for (let i = 0; i < 3; i++) expect((await call()).key).toBe("second");
    // The calls in flight ran to their end, on the replicas they had.
    expect(await inFlight).toMatchObject({ key: "first" });
    const ended = await apps.viewWhen("rotating", runId, (v) => v.status !== "running");
    expect(ended.status).toBe("success");
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
