// The local owner's token in local.json across a rotation of the signing keys (`runlet keys
// rotate`): the control plane writes a token signed with the new key, and keeps the expiry the
// owner chose. Real key files and local.json in a temp RUNLET_HOME, a libSQL database.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { tokenKid } from "../common/jwt.ts";
import { fileKeyStore, loadOrCreateSigningKey } from "./auth/keys.ts";
import { issueToken, publicKeysOf } from "./auth/tokens.ts";
import { bootstrapLocal } from "./bootstrap.ts";
import { homePaths, readLocalJson, writePrivateFile } from "./home.ts";
import { libsqlFixture } from "./testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let home: string;
const DAY = 24 * 3600 * 1000;

beforeAll(async () => {
  f = await libsqlFixture();
  home = await mkdtemp(join(tmpdir(), "runlet-bootstrap-"));
  const keys = await loadOrCreateSigningKey(home);
  Object.assign(f.deps, {
    keys,
    publicKeys: await publicKeysOf(keys),
    keyStore: fileKeyStore(home),
  });
});
afterAll(async () => {
  await f.cleanup();
  await rm(home, { recursive: true, force: true });
});

const bootstrap = () =>
  bootstrapLocal(f.db, f.deps.keys, f.deps.publicKeys, {
    home,
    baseUrl: "http://127.0.0.1:1",
    apiUrl: "http://127.0.0.1:2",
  });

/** A token's `exp`, in ms. */
const expiryOf = (token: string) =>
  JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")).exp * 1000;

it("writes local.json's token anew after a rotation, with the expiry the owner gave it", async () => {
  const first = await bootstrap();
  const owner = JSON.parse(Buffer.from(first.token.split(".")[1] ?? "", "base64url").toString())
    .sub as string;
  // `runlet users token --expires 90d` for the local owner, saved in local.json.
  const chosen = Date.now() + 90 * DAY;
  const { token } = await issueToken(f.db, f.deps.keys, {
    subject: owner,
    expiresAt: new Date(chosen),
  });
  await writePrivateFile(homePaths(home).localJson, JSON.stringify({ ...first, token }));
  expect((await bootstrap()).token).toBe(token); // a good token is kept as it is

  const rotated = await f.call("POST", "/v2/keys/rotate", { token });
  expect(rotated.status).toBe(201);
  await bootstrap(); // what the control plane does once its keys changed (onKeysChanged)
  const renewed = (await readLocalJson(home))?.token as string;
  expect(tokenKid(renewed)).toBe(f.deps.keys.kid);
  expect(tokenKid(renewed)).not.toBe(tokenKid(token));
  // Before, a year from the rotation.
  expect(Math.abs(expiryOf(renewed) - chosen)).toBeLessThan(2_000);
});
