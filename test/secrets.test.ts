// A project's secrets in its apps' environment, on a whole local Runlet: set with the management
// API, read by a managed and a custom app's code, a change seen by the replicas started after it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client } from "./apps.ts";
import { json, newHome, type Runlet, removeHome, startRunlet } from "./harness.ts";

let home: string;
let runlet: Runlet;

beforeAll(async () => {
  home = await newHome();
  runlet = await startRunlet(home);
}, 120_000);

afterAll(async () => {
  await runlet?.stop();
  if (home) await removeHome(home);
});

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

  it("are in a custom app's environment", async () => {
    await setSecret("API_KEY", "for-the-web");
    await client(runlet).deploy(CUSTOM);
    const { apiUrl, projectId, token } = runlet.local;
    const res = await fetch(`${apiUrl}/v4/${projectId}/envy-web/anything`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ key: "for-the-web" });
  });
});
