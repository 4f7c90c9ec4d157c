// Rotating the signing key with overlap (docs/deploy.md, "Rotating the platform's secrets"): a
// new key signs, the one before keeps verifying until an operator retires it, and a token of a
// retired key is refused as such. The keys are real files in a temp RUNLET_HOME.
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import {
  generateSigningKey,
  importJwks,
  type Jwks,
  tokenKid,
  verifyJwt,
} from "../../common/jwt.ts";
import { fileKeyStore, loadOrCreateSigningKey } from "../auth/keys.ts";
import { parsePreviousKeys, signingKeysFrom } from "../auth/signing.ts";
import { issueToken, publicKeysOf } from "../auth/tokens.ts";
import { users } from "../db/schema.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let home: string;
let operator: string;

const YEAR = 365 * 24 * 3600 * 1000;
const tokenOf = async (subject: string) =>
  (await issueToken(f.db, f.deps.keys, { subject, expiresAt: new Date(Date.now() + YEAR) })).token;
const body = async (res: Response) => (await res.json()) as Record<string, unknown>;
const projectAs = (token: string) => f.call("GET", `/v2/projects/${f.projectId}/apps`, { token });

beforeAll(async () => {
  f = await libsqlFixture();
  home = await mkdtemp(join(tmpdir(), "runlet-keys-"));
  const keys = await loadOrCreateSigningKey(home);
  Object.assign(f.deps, {
    keys,
    publicKeys: await publicKeysOf(keys),
    keyStore: fileKeyStore(home),
  });
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  operator = await tokenOf(f.owner.id);
});
afterAll(async () => {
  await f.cleanup();
  await rm(home, { recursive: true, force: true });
});

it("signs with a new key after a rotation, and still accepts tokens of the one before", async () => {
  const before = await tokenOf(f.member.id);
  const oldKid = tokenKid(before);
  const res = await f.call("POST", "/v2/keys/rotate", { token: operator });
  expect(res.status).toBe(201);
  const { keys } = (await body(res)) as { keys: Array<Record<string, unknown>> };
  expect(keys).toMatchObject([
    { state: "signing", replacedAt: null },
    { kid: oldKid, state: "previous", retiredAt: null },
  ]);
  const newKid = keys[0]?.kid;
  expect(newKid).not.toBe(oldKid);

  expect((await projectAs(before)).status).toBe(200);
  const after = await tokenOf(f.member.id);
  expect(tokenKid(after)).toBe(newKid);
  expect((await projectAs(after)).status).toBe(200);

  // The JWKS the Worker reads has both; so do the files a restart reads.
  const jwks = (await (await f.app.request("/.well-known/jwks.json")).json()) as Jwks;
  expect(jwks.keys.map((k) => k.kid)).toEqual([newKid, oldKid]);
  const restarted = await loadOrCreateSigningKey(home);
  expect(restarted.kid).toBe(newKid);
  expect(restarted.jwks).toEqual(jwks);
  expect((await stat(join(home, "keys", "jwt-previous-keys.json"))).mode & 0o777).toBe(0o600);
  expect(await readFile(join(home, "keys", "jwt-previous-keys.json"), "utf8")).not.toContain(
    "privateJwk",
  );
});

it("refuses a retired key's tokens with a message that says so, here and at the Worker", async () => {
  const { keys } = (await body(await f.call("GET", "/v2/keys", { token: operator }))) as {
    keys: Array<{ kid: string; state: string }>;
  };
  const previous = keys.find((k) => k.state === "previous")?.kid ?? "";
  const signing = keys[0]?.kid ?? "";
  const refusal = async (path: string, status: number, message: RegExp, token = operator) => {
    const res = await f.call("POST", path, { token });
    expect(res.status).toBe(status);
    expect((await body(res)).message).toMatch(message);
  };
  await refusal(`/v2/keys/${signing}/retire`, 409, /signed with now: rotate first/);
  await refusal("/v2/keys/nope/retire", 404, /no signing key 'nope'/);

  // The operator's own token was signed with `previous`, before the rotation.
  const mine = tokenKid(operator);
  expect(mine).toBe(previous);
  await refusal(`/v2/keys/${previous}/retire`, 409, /the token you are calling with/);
  const retired = await f.call("POST", `/v2/keys/${previous}/retire?force=true`, {
    token: operator,
  });
  expect(retired.status).toBe(200);
  const res = await projectAs(operator);
  expect(res.status).toBe(401);
  expect((await body(res)).message).toMatch(
    new RegExp(
      `^token was signed by key ${previous}, which was retired at .*: ask for a new token$`,
    ),
  );

  // The Worker reads the same from the JWKS: the key is gone from it, its id listed as retired.
  const jwks = (await (await f.app.request("/.well-known/jwks.json")).json()) as Jwks;
  expect(jwks.keys.map((k) => k.kid)).toEqual([signing]);
  await expect(verifyJwt(operator, await importJwks(jwks))).rejects.toMatchObject({
    reason: "retired-key",
  });
  const again = await tokenOf(f.owner.id);
  await refusal(`/v2/keys/${previous}/retire`, 409, /already retired/, again);
});

it("lets only operators see or change the keys, and only where it keeps them", async () => {
  const member = await tokenOf(f.member.id);
  for (const [method, path] of [
    ["GET", "/v2/keys"],
    ["POST", "/v2/keys/rotate"],
  ] as const) {
    const res = await f.call(method, path, { token: member });
    expect(res.status).toBe(403);
    expect((await body(res)).message).toBe(
      "only an operator of this Runlet may see or change its signing keys",
    );
  }
  const store = f.deps.keyStore;
  f.deps.keyStore = undefined; // as on Workers, where they are secrets
  try {
    const res = await f.call("POST", "/v2/keys/rotate", { token: await tokenOf(f.owner.id) });
    expect(res.status).toBe(409);
    expect((await body(res)).message).toMatch(/SIGNING_KEY, PREVIOUS_SIGNING_KEYS on Workers/);
  } finally {
    f.deps.keyStore = store;
  }
});

it("reads PREVIOUS_SIGNING_KEYS as docs/deploy.md makes it, and names it when it is wrong", async () => {
  const [old, gone, now] = [
    await generateSigningKey(),
    await generateSigningKey(),
    await generateSigningKey(),
  ];
  const entry = (k: typeof old, more = {}) => ({ kid: k.kid, publicJwk: k.publicJwk, ...more });
  const text = JSON.stringify([
    { ...entry(old, { replacedAt: "2026-11-26T08:00:00.000Z" }), privateJwk: old.privateJwk },
    entry(gone, { retiredAt: "2026-11-26T09:00:00.000Z" }),
  ]);
  const previous = parsePreviousKeys(text, "PREVIOUS_SIGNING_KEYS");
  expect(JSON.stringify(previous)).not.toContain("privateJwk");
  const keys = await signingKeysFrom(now, previous);
  expect(keys.jwks.keys.map((k) => k.kid)).toEqual([now.kid, old.kid]);
  expect(keys.jwks.retired).toEqual([{ kid: gone.kid, retiredAt: "2026-11-26T09:00:00.000Z" }]);
  expect(parsePreviousKeys(undefined, "X")).toEqual([]);
  for (const [bad, message] of [
    ["{", "PREVIOUS_SIGNING_KEYS is not JSON"],
    ['{"kid":"a"}', "PREVIOUS_SIGNING_KEYS must be a JSON array of {kid, publicJwk, retiredAt?}"],
    ['[{"kid":"a"}]', "PREVIOUS_SIGNING_KEYS[0] must have a kid and a P-256 publicJwk"],
    [
      JSON.stringify([entry(old, { retiredAt: "soon" })]),
      "PREVIOUS_SIGNING_KEYS[0].retiredAt must be a date (ISO 8601)",
    ],
  ])
    expect(() => parsePreviousKeys(bad, "PREVIOUS_SIGNING_KEYS")).toThrow(message);
});

it("answers a change it made though what follows it fails (local.json not renewed): said in its log", async () => {
  const token = await tokenOf(f.owner.id);
  const said = vi.spyOn(console, "error").mockImplementation(() => {});
  f.deps.onKeysChanged = async () => {
    throw new Error("SQLITE_BUSY: database is locked");
  };
  try {
    const res = await f.call("POST", "/v2/keys/rotate", { token });
    // The key was changed: a 500 sent the operator to rotate again, making yet another key.
    expect(res.status).toBe(201);
    const { keys } = (await body(res)) as { keys: Array<{ kid: string }> };
    expect(tokenKid(await tokenOf(f.owner.id))).toBe(keys[0]?.kid);
    expect(said.mock.calls.flat().join(" ")).toMatch(/SQLITE_BUSY/);
  } finally {
    f.deps.onKeysChanged = undefined;
    said.mockRestore();
  }
});

it("lists a service account and a user whose token's key was retired as such (keyRetiredAt, tokenKeyRetiredAt), not as ones that work", async () => {
  let token = await tokenOf(f.owner.id);
  const expiresAt = new Date(Date.now() + YEAR).toISOString();
  const accounts = `/v2/projects/${f.projectId}/service-accounts`;
  const make = async (name: string) =>
    (await body(await f.call("POST", accounts, { token, body: { name, expiresAt } }))) as {
      token: string;
    };
  const listed = async () => {
    const { serviceAccounts } = (await body(await f.call("GET", accounts, { token }))) as {
      serviceAccounts: Array<{ name: string; keyRetiredAt: string | null }>;
    };
    return Object.fromEntries(serviceAccounts.map((a) => [a.name, a.keyRetiredAt]));
  };
  const before = await make("made-before-rotation");
  const old = tokenKid(before.token) ?? "";
  // The member's token (their newest) is of that key too.
  const memberToken = await tokenOf(f.member.id);
  const users = `/v2/projects/${f.projectId}/users`;
  const memberKeyRetiredAt = async () => {
    const listed = (await body(await f.call("GET", users, { token }))) as {
      users: Array<{ id: string; tokenKeyRetiredAt: string | null }>;
    };
    return listed.users.find((u) => u.id === f.member.id)?.tokenKeyRetiredAt;
  };
  // A rotation in the very millisecond the token was made could not be told apart from one after.
  for (let made = Date.now(); Date.now() === made; ) await new Promise((r) => setTimeout(r, 1));
  expect((await f.call("POST", "/v2/keys/rotate", { token })).status).toBe(201);
  token = await tokenOf(f.owner.id);
  const after = await make("made-after-rotation");
  expect(tokenKid(after.token)).not.toBe(old);
  expect(await listed()).toMatchObject({
    "made-before-rotation": null,
    "made-after-rotation": null,
  });
  expect(await memberKeyRetiredAt()).toBeNull();

  const retired = await f.call("POST", `/v2/keys/${old}/retire`, { token });
  expect(retired.status).toBe(200);
  const { keys } = (await body(retired)) as { keys: Array<{ kid: string; retiredAt: string }> };
  const retiredAt = keys.find((k) => k.kid === old)?.retiredAt;
  expect(retiredAt).toEqual(expect.any(String));
  expect(await listed()).toMatchObject({
    "made-before-rotation": retiredAt,
    "made-after-rotation": null,
  });
  expect((await projectAs(before.token)).status).toBe(401);
  expect((await projectAs(after.token)).status).toBe(200);
  expect(await memberKeyRetiredAt()).toBe(retiredAt);
  expect((await projectAs(memberToken)).status).toBe(401);
});
