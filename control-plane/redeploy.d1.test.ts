// A rollback on the control plane's Workers entry's parts: D1 and the R2 bundle store (local, as
// `wrangler dev --env control-plane` gives them). The route's cases are on libSQL
// (routes/apps-redeploy.test.ts); here, that a kept bundle read back from R2 deploys again.
import { env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/d1";
import { beforeAll, expect, it } from "vitest";
import { r2Bundles } from "./bundles.ts";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { createFixture, type Fixture } from "./testing/fixture.ts";

let f: Fixture;

beforeAll(async () => {
  const db = drizzle(env.DB, { schema }) as unknown as Database;
  f = await createFixture(db, { bundles: r2Bundles(env.BUNDLES) });
});

async function deploy(answer: string) {
  const files = [
    { path: "runlet.toml", contentBase64: btoa('name = "r2back"\n') },
    { path: "main.mjs", contentBase64: btoa(`export const run = () => "${answer}";\n`) },
  ];
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(201);
}

const live = async () =>
  (await (await f.call("GET", `/v2/projects/${f.projectId}/apps/r2back`)).json()) as {
    version: number;
    digest: string;
  };

it("deploys version 1's files, read back from R2, as version 3", async () => {
  await deploy("one");
  const one = await live();
  await deploy("two");
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps/r2back/versions/1/redeploy`);
  expect(res.status, await res.clone().text()).toBe(201);
  expect(await live()).toEqual(expect.objectContaining({ version: 3, digest: one.digest }));
  const kept = await env.BUNDLES.get(`${f.projectId}/r2back/v3-${one.digest}.json`);
  expect(kept).not.toBeNull();
});
