// Two deploys of one app at once through two control planes over one database and one bundle
// store: two isolates of the control plane on Workers (each with its own queue of deploys), or
// two control-plane processes on one libSQL server. Each reads the same current version and
// takes the next number; the database lets one of them record it (the other is 409). The
// bundle a host then fetches for that version must be the one recorded, whoever wrote last.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { digestOfBundle } from "../../common/bundle-digest.ts";
import { createControlPlane } from "../app.ts";
import type { BundleStore } from "../bundles.ts";
import { users } from "../db/schema.ts";
import { memoryBundles } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

const b64 = (text: string) => Buffer.from(text).toString("base64");
const filesOf = (tag: string) => [
  { path: "runlet.toml", contentBase64: b64('name = "raced"') },
  { path: "main.mjs", contentBase64: b64(`export const run = () => "${tag}";`) },
];

/** Bundles in memory whose writes of a tag's files wait while the tag is held. */
function heldBundles() {
  const inner = memoryBundles();
  const holds = new Map<string, Promise<void>>();
  /** Writes waiting on a hold now. */
  let waiting = 0;
  const store: BundleStore = {
    ...inner,
    async put(key, bundle) {
      const text = JSON.stringify(bundle);
      for (const [tag, held] of holds) {
        if (!text.includes(b64(`export const run = () => "${tag}";`))) continue;
        waiting++;
        await held;
        waiting--;
      }
      return inner.put(key, bundle);
    },
  };
  /** Holds the writes of `tag`'s files until the function returned is called. */
  const hold = (tag: string) => {
    let release: () => void = () => {};
    holds.set(tag, new Promise<void>((resolve) => (release = resolve)));
    return release;
  };
  /** Resolves once `n` writes wait on holds (within 10 s). */
  const waitingFor = async (n: number) => {
    for (let i = 0; i < 200 && waiting < n; i++) await new Promise((r) => setTimeout(r, 50));
    expect(waiting).toBe(n);
  };
  return { store, hold, waitingFor, kept: inner.kept };
}

const held = heldBundles();
let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture({ bundles: held.store });
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id)); // host tokens
});

afterAll(() => f.cleanup());

it("serves the recorded version's own files when a deploy that lost the race wrote its bundle last", async () => {
  const other = createControlPlane(f.deps); // a second isolate, with its own queue of deploys
  const path = `/v2/projects/${f.projectId}/apps`;
  const deployThrough = (app: typeof other, tag: string) =>
    app.request(path, {
      method: "POST",
      headers: { authorization: `Bearer ${f.owner.token}`, "content-type": "application/json" },
      body: JSON.stringify({ files: filesOf(tag) }),
    });
  // 'late' reads version 0 and waits in its bundle's write; 'first' is recorded as version 1.
  const release = held.hold("late");
  const late = deployThrough(other, "late");
  await held.waitingFor(1);
  const first = await deployThrough(f.app, "first");
  expect(first.status).toBe(201);
  release();
  const lost = await late;
  expect(lost.status).toBe(409);

  // What a host fetches, with a host token.
  const made = await f.call("POST", "/v2/hosts/tokens", { body: { name: "rack" } });
  const { token } = (await made.json()) as { token: string };
  const hostGet = (p: string) => f.call("GET", p, { token });
  const current = (await (await hostGet(`/internal/bundles/${f.projectId}/raced`)).json()) as {
    version: number;
    digest: string;
  };
  expect(current).toMatchObject({ version: 1, digest: await digestOfBundle(filesOf("first")) });
  const bundle = (await (await hostGet(`/internal/bundles/${f.projectId}/raced/1`)).json()) as {
    files: Array<{ path: string; contentBase64: string }>;
  };
  // Before, version 1's bundle was the loser's: every host refused it (its digest is not the
  // recorded one) and every call of the app was 502 until the next deploy.
  expect(await digestOfBundle(bundle.files)).toBe(current.digest);
  // The loser's own bundle went with its 409.
  expect([...held.kept.keys()].filter((k) => k.includes("/raced/"))).toEqual([
    `${f.projectId}/raced/v1-${current.digest}`,
  ]);

  // The same files deployed twice at once: the loser's 409 leaves the winner's bundle (the same
  // name) in place.
  const releaseSame = held.hold("same");
  const both = [deployThrough(other, "same"), deployThrough(f.app, "same")];
  await held.waitingFor(2);
  releaseSame();
  const [a, b] = (await Promise.all(both)) as [Response, Response];
  expect([a.status, b.status].sort()).toEqual([201, 409]);
  const two = (await (await hostGet(`/internal/bundles/${f.projectId}/raced/2`)).json()) as {
    files: Array<{ path: string; contentBase64: string }>;
  };
  expect(await digestOfBundle(two.files)).toBe(await digestOfBundle(filesOf("same")));
});
