// POST /v2/projects/{id}/apps/{name}/versions/{version}/redeploy: an earlier version's kept files
// deployed again as the app's next version, the way a deploy goes (its replica started first,
// recorded, audited, announced). Before it, undoing a bad deploy meant finding the old folder
// and deploying it by hand.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DeployRequest } from "../../common/protocol/deploy.ts";
import type { RuntimeHosts } from "../host-client.ts";
import { bundleFiles, memoryBundles, noRuntimeHosts } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

/** The versions the hosts were asked to start, and those that fail to. */
const trials: Array<{ app: string; version: number; digest: string }> = [];
const failing = new Set<string>();
let unavailable = false;
const announced: Array<{ app: string; version: number; digest: string | null }> = [];
const hosts: RuntimeHosts = {
  ...noRuntimeHosts,
  async start({ app, digest, bundle }) {
    trials.push({ app, version: bundle.version, digest });
    if (unavailable) return { state: "unavailable", reasons: [] };
    if (failing.has(digest))
      return {
        state: "failed",
        host: "hst_t",
        message: "the app failed to start: boom",
        output: [],
      };
    return { state: "started", host: "hst_t", ms: 3, exports: ["run"] };
  },
  async announce({ app, version, digest }) {
    announced.push({ app, version, digest });
  },
};

let f: Awaited<ReturnType<typeof libsqlFixture>>;
const bundles = memoryBundles();

beforeAll(async () => {
  f = await libsqlFixture({ hosts, bundles });
});
afterAll(() => f.cleanup());

const appPath = (name: string) => `/v2/projects/${f.projectId}/apps/${name}`;

/** Deploys `name` answering `answer`: its version and digest. */
async function deploy(name: string, answer: string) {
  const files = bundleFiles({
    "runlet.toml": `name = "${name}"\n`,
    "main.mjs": `export const run = () => ${JSON.stringify(answer)};\n`,
  });
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status, await res.clone().text()).toBe(201);
  return live(name);
}

type Live = { version: number; digest: string; functions: string[] | null };
async function live(name: string): Promise<Live> {
  return (await (await f.call("GET", appPath(name))).json()) as Live;
}

const redeploy = (name: string, version: number | string, query = "", token = f.member.token) =>
  f.call("POST", `${appPath(name)}/versions/${version}/redeploy${query}`, { token });

const message = async (res: Response) => ((await res.json()) as { message: string }).message;

/** The code of `main.mjs` in a kept bundle of `name`. */
function mainOf(name: string, version: number, digest: string): string {
  const text = bundles.kept.get(`${f.projectId}/${name}/v${version}-${digest}`);
  const bundle = JSON.parse(text ?? "null") as DeployRequest;
  const main = bundle.files.find((file) => file.path === "main.mjs");
  return Buffer.from(main?.contentBase64 ?? "", "base64").toString();
}

describe("redeploying an earlier version", () => {
  it("deploys version 1's files as version 3, started first, announced and audited", async () => {
    const one = await deploy("svc", "one");
    await deploy("svc", "two");
    trials.length = 0;
    const res = await redeploy("svc", 1);
    expect(res.status, await res.clone().text()).toBe(201);
    expect(await res.json()).toMatchObject({
      name: "svc",
      runtime: "managed",
      version: 3,
      files: 2,
      // With what the module exports, as the host found it: runlet deploy's hint names one.
      started: { host: "hst_t", ms: 3, exports: ["run"] },
    });
    // Kept with the version: the run API refuses an async call of another at once.
    expect(await live("svc")).toMatchObject({ version: 3, digest: one.digest, functions: ["run"] });
    expect(trials).toEqual([{ app: "svc", version: 3, digest: one.digest }]);
    // The versions list says which is a rollback, and of what; the same code has the same digest.
    const listed = await f.call("GET", `${appPath("svc")}/versions`);
    const { versions } = (await listed.json()) as {
      versions: Array<{ version: number; rolledBackFrom: number | null; digest: string }>;
    };
    expect(versions.map((v) => [v.version, v.rolledBackFrom])).toEqual([
      [3, 1],
      [2, null],
      [1, null],
    ]);
    expect(versions[0]?.digest).toBe(versions[2]?.digest);
    expect(announced.at(-1)).toEqual({ app: "svc", version: 3, digest: one.digest });
    expect(mainOf("svc", 3, one.digest)).toBe('export const run = () => "one";\n');

    const log = await f.call("GET", `/v2/projects/${f.projectId}/audit-log?action=apps.deploy`);
    const { logs } = (await log.json()) as { logs: Array<Record<string, unknown>> };
    expect(logs[0]).toMatchObject({
      outcome: "success",
      actor: { id: f.member.id },
      target: { type: "app", id: "svc" },
      metadata: { version: 3, rolledBackFrom: 1, files: 2 },
    });
  });

  it("honours startCheck=false as a deploy does: recorded without a start", async () => {
    await deploy("unchecked", "one");
    await deploy("unchecked", "two");
    trials.length = 0;
    const res = await redeploy("unchecked", 1, "?startCheck=false");
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ version: 3, started: null });
    expect(trials).toEqual([]);
    expect((await live("unchecked")).functions).toBeNull(); // not known without the check
  });

  it("refuses a version that does not start with 422, the live version unchanged and the refusal audited", async () => {
    const bad = await deploy("flaky", "bad");
    await deploy("flaky", "good");
    failing.add(bad.digest);
    const res = await redeploy("flaky", 1);
    expect(res.status).toBe(422);
    expect(await message(res)).toBe(
      "version 3 of 'flaky' was not deployed (version 2 still answers): the app failed to start: boom",
    );
    expect((await live("flaky")).version).toBe(2);
    const listed = await f.call("GET", `${appPath("flaky")}/versions`);
    expect(((await listed.json()) as { versions: unknown[] }).versions).toHaveLength(2);
    const log = await f.call(
      "GET",
      `/v2/projects/${f.projectId}/audit-log?action=apps.deploy&outcome=failure`,
    );
    const { logs } = (await log.json()) as { logs: Array<Record<string, unknown>> };
    expect(logs[0]).toMatchObject({ target: { id: "flaky" }, metadata: { status: 422 } });
  });
});

describe("what it refuses", () => {
  it("an unknown app or version: 404", async () => {
    await deploy("known", "one");
    const app = await redeploy("nope", 1);
    expect(app.status).toBe(404);
    expect(await message(app)).toBe(`app 'nope' is not deployed in project '${f.projectId}'`);
    const version = await redeploy("known", 7);
    expect(version.status).toBe(404);
    expect(await message(version)).toBe("app 'known' has no version 7 (its versions are 1 to 1)");
    expect((await redeploy("known", "0")).status).toBe(400);
  });

  it("takes no body fields: {x} is a 400 naming it, nothing deployed; {} is fine", async () => {
    await deploy("strict", "one");
    await deploy("strict", "two");
    const path = `${appPath("strict")}/versions/1/redeploy`;
    const typo = await f.call("POST", path, { token: f.member.token, body: { to: 1 } });
    expect(typo.status).toBe(400);
    expect(await message(typo)).toMatch(/to/);
    expect((await live("strict")).version).toBe(2);
    expect((await f.call("POST", path, { token: f.member.token, body: {} })).status).toBe(201);
  });

  it("the live version: 409, nothing deployed", async () => {
    await deploy("same", "one");
    const res = await redeploy("same", 1);
    expect(res.status).toBe(409);
    expect(await message(res)).toBe("version 1 of 'same' is already live: nothing was deployed");
    expect((await live("same")).version).toBe(1);
  });

  it("a version whose files are no longer kept: 409 saying what to do instead; the list says which are kept", async () => {
    for (let i = 1; i <= 12; i++) await deploy("old", `v${i}`);
    const res = await redeploy("old", 2);
    expect(res.status).toBe(409);
    expect(await message(res)).toBe(
      "the files of version 2 of 'old' are no longer kept: only an app's 10 newest versions keep theirs (now 3 to 12). Deploy its folder as it was at that version instead (runlet deploy <folder>)",
    );
    expect((await live("old")).version).toBe(12);
    const listed = await f.call("GET", `${appPath("old")}/versions`);
    const { versions } = (await listed.json()) as {
      versions: Array<{ version: number; kept: boolean }>;
    };
    expect(versions.filter((v) => v.kept).map((v) => v.version)).toEqual([
      12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
    ]);
    expect((await redeploy("old", 3)).status).toBe(201);
  });

  it("no runtime host to start it on: 503 naming the rollback's own command without the check", async () => {
    await deploy("hostless", "one");
    await deploy("hostless", "two");
    unavailable = true;
    try {
      const res = await redeploy("hostless", 1);
      expect(res.status).toBe(503);
      expect(await message(res)).toBe(
        "version 3 of 'hostless' was not deployed (version 2 still answers): no runtime host is up to start a replica of it first. Try again once one is (runlet hosts), or deploy without the check (runlet apps rollback hostless --to 1 --no-start-check, ?startCheck=false): the version is then made current whether it starts or not",
      );
    } finally {
      unavailable = false;
    }
    expect((await live("hostless")).version).toBe(2);
  });

  it("an outsider: 403", async () => {
    const res = await redeploy("svc", 1, "", f.outsider.token);
    expect(res.status).toBe(403);
  });
});
