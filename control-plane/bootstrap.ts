import { and, asc, eq } from "drizzle-orm";
import { newId } from "../common/ids.ts";
import { type PublicKeys, tokenKid } from "../common/jwt.ts";
import { LOCAL_HOST_TOKEN } from "../common/protocol/hosts.ts";
import type { SigningKeys } from "./auth/signing.ts";
import { authenticate, issueToken } from "./auth/tokens.ts";
import type { Database } from "./db/index.ts";
import { memberships, projects, users } from "./db/schema.ts";
import {
  homePaths,
  type LocalJson,
  loadOrCreateHostToken,
  readLocalJson,
  writePrivateFile,
} from "./home.ts";
import { adoptHostToken, createHostToken } from "./hosts/tokens.ts";

export const LOCAL_OWNER_NAME = "local owner";
const TOKEN_LIFETIME_MS = 365 * 24 * 3600 * 1000;
const RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;

/**
 * First start: creates the local owner user, a project and an owner token, and writes
 * `local.json` (0600). Later starts reuse them, renewing the token only when it no longer verifies,
 * was signed with a key before the current one, or expires within 30 days; and so does a change
 * of the signing keys (`runlet keys`).
 */
export async function bootstrapLocal(
  db: Database,
  keys: SigningKeys,
  publicKeys: PublicKeys,
  opts: { home: string; baseUrl: string; apiUrl: string },
): Promise<LocalJson> {
  const previous = await readLocalJson(opts.home);
  const now = Date.now();

  let [owner] = await db
    .select()
    .from(users)
    .where(eq(users.name, LOCAL_OWNER_NAME))
    .orderBy(asc(users.createdAt))
    .limit(1);
  if (!owner) {
    owner = { id: newId("usr"), name: LOCAL_OWNER_NAME, createdAt: now, operator: true };
    await db.insert(users).values(owner);
  } else if (!owner.operator) {
    // An installation from before operators: its local owner runs it.
    await db.update(users).set({ operator: true }).where(eq(users.id, owner.id));
  }

  let [project] = await db
    .select({ id: projects.id })
    .from(projects)
    .innerJoin(memberships, eq(memberships.projectId, projects.id))
    .where(and(eq(memberships.userId, owner.id), eq(memberships.role, "owner")))
    .orderBy(asc(projects.createdAt))
    .limit(1);
  if (!project) {
    project = { id: newId("prj") };
    await db.batch([
      db
        .insert(projects)
        .values({ id: project.id, name: "default", plan: "hobby", createdAt: now }),
      db.insert(memberships).values({ projectId: project.id, userId: owner.id, role: "owner" }),
    ]);
  }

  let token = previous?.token;
  const held = token ? await expiryOf(db, publicKeys, token, owner.id) : undefined;
  const lasts = held !== undefined && held - now > RENEW_BEFORE_MS;
  if (!token || !lasts || tokenKid(token) !== keys.kid) {
    // One signed with a previous key is replaced now, before an operator retires that key, and
    // keeps its expiry: a token made for 90 days (runlet users token --expires 90d) came back
    // from a rotation good for a year.
    ({ token } = await issueToken(db, keys, {
      subject: owner.id,
      expiresAt: new Date(lasts ? held : now + TOKEN_LIFETIME_MS),
    }));
  }

  await ensureLocalHostToken(db, opts.home, owner.id);

  const local: LocalJson = {
    baseUrl: opts.baseUrl,
    apiUrl: opts.apiUrl,
    projectId: project.id,
    token,
  };
  if (JSON.stringify(local) !== JSON.stringify(previous)) {
    await writePrivateFile(homePaths(opts.home).localJson, `${JSON.stringify(local, null, 2)}\n`);
  }
  return local;
}

/**
 * The host token of this home's own hosts (RUNLET_HOME/host-token, which `runlet start` makes
 * before starting them): adopted if new, kept if valid, replaced (and rewritten) if revoked.
 */
async function ensureLocalHostToken(db: Database, home: string, ownerId: string): Promise<void> {
  const token = await loadOrCreateHostToken(home);
  if (await adoptHostToken(db, token, { name: LOCAL_HOST_TOKEN, createdBy: ownerId })) return;
  // Made even beside another live `local` (a home whose token file was replaced): the hosts of
  // `runlet start` need one.
  const made = { name: LOCAL_HOST_TOKEN, createdBy: ownerId };
  const created = await createHostToken(db, made, "allowed");
  await writePrivateFile(homePaths(home).hostToken, `${created.token}\n`);
}

/** When local.json's token expires (ms), if it verifies as the local owner's; else undefined. */
async function expiryOf(
  db: Database,
  publicKeys: PublicKeys,
  token: string,
  ownerId: string,
): Promise<number | undefined> {
  try {
    const principal = await authenticate(db, publicKeys, `Bearer ${token}`);
    const [, payload = ""] = token.split(".");
    const { exp } = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as {
      exp: number;
    };
    return principal.id === ownerId ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
