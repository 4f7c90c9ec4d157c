/**
 * Dashboard sessions. A session is a token of its own — a JWT of the signed-in principal, made
 * at sign-in, kept only in an HttpOnly, SameSite=Strict cookie — whose row names the token its
 * holder signed in with (`parentId`): revoking that token, or its service account, ends the
 * session (see `authenticate`). The dashboard calls the public APIs with it, so a page can do
 * exactly what its holder may do, no more.
 *
 * Two ways in: a one-time link (`runlet dashboard`: 5 minutes, once, only its hash kept), or a
 * token pasted on the sign-in page (how a teammate signs in to a deployed Runlet).
 */
import { and, asc, eq, gt, inArray, isNotNull, isNull, lt, notInArray, sql } from "drizzle-orm";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { type PublicKeys, verifyJwt } from "../../common/jwt.ts";
import { newSecret, secretHash } from "../../common/same-secret.ts";
import { isOperator } from "../auth/access.ts";
import type { SigningKeys } from "../auth/signing.ts";
import { authenticate, type Principal, prepareToken } from "../auth/tokens.ts";
import type { Database } from "../db/index.ts";
import { memberships, signInLinks, tokens } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { projectsOf } from "../routes/projects-list.ts";

/** How long a session lasts (never longer than the token it came from). */
export const SESSION_MS = 12 * 3600_000;
/** How long a sign-in link works (once). */
export const LINK_MS = 5 * 60_000;
/**
 * How long links and sessions are kept once expired: a day, then the next sign-in (a link's or a
 * pasted token's) removes them, up to PRUNED at a time. Each sign-in left a link and a session
 * for good (430 bytes of runlet.db per sign-in, measured over 2,000).
 */
export const EXPIRED_KEPT_MS = 24 * 3600_000;
const PRUNED = 500;

const SESSION_COOKIE = "runlet_session";
const PROJECT_COOKIE = "runlet_project";

export interface Session {
  principal: Principal;
  /** The session's own token: the dashboard's bearer token on both APIs. */
  token: string;
  /** The project the pages show. */
  projectId: string;
  /** Every project the principal may open, by name. */
  projects: Array<{ id: string; name: string }>;
  /** The principal's role in the project the pages show. */
  role: string;
  /** An operator of this Runlet: the navigation offers the hosts page (docs/hosts.md). */
  operator: boolean;
}

/** A one-time sign-in link for `principal` into `projectId`, made from the token it used. */
export async function createSignInLink(
  db: Database,
  principal: Principal,
  projectId: string,
  origin: string,
): Promise<{ url: string; expiresAt: string }> {
  const code = newSecret();
  const now = Date.now();
  await db.insert(signInLinks).values({
    codeHash: await secretHash(code),
    subject: principal.id,
    tokenId: principal.tokenId,
    projectId,
    createdAt: now,
    expiresAt: now + LINK_MS,
  });
  return {
    url: `${origin}/dashboard/sign-in?code=${encodeURIComponent(code)}`,
    expiresAt: new Date(now + LINK_MS).toISOString(),
  };
}

/** Uses a sign-in link: a new session, or null when the link is unknown, used or expired. */
export async function useSignInLink(
  db: Database,
  keys: SigningKeys,
  code: string,
): Promise<{ token: string; projectId: string; expiresAt: number } | null> {
  const now = Date.now();
  // Marked used in the same statement that finds it: two requests with one link get one session.
  const [link] = await db
    .update(signInLinks)
    .set({ usedAt: now })
    .where(
      and(
        eq(signInLinks.codeHash, await secretHash(code)),
        isNull(signInLinks.usedAt),
        gt(signInLinks.expiresAt, now),
      ),
    )
    .returning();
  if (!link) return null;
  const session = await startSession(db, keys, link.tokenId);
  return session && { ...session, projectId: link.projectId };
}

/** Signs in with a pasted token: a new session, or the API's 401 error. */
export async function signInWithToken(
  db: Database,
  keys: SigningKeys,
  publicKeys: PublicKeys,
  pasted: string,
): Promise<{ token: string; expiresAt: number; projectId: string | undefined }> {
  const principal = await authenticate(db, publicKeys, `Bearer ${pasted.trim()}`);
  if (principal.type === "service_account" && principal.role === "caller")
    throw new ApiError(
      "forbidden",
      "this service account's role is caller: it calls the project's apps, and has no dashboard (sign in with a member's or an owner's token)",
    );
  const projectId = principal.type === "service_account" ? principal.projectId : undefined;
  const session = await startSession(db, keys, principal.tokenId);
  if (!session) throw new ApiError("unauthorized", "token has been revoked");
  return { ...session, projectId };
}

/**
 * Removes sign-in links and session tokens expired before `before`, the oldest first: links
 * first, then the sessions no link names (a link names the token that asked for it).
 */
async function pruneExpired(db: Database, before: number): Promise<void> {
  const oldLinks = db
    .select({ code: signInLinks.codeHash })
    .from(signInLinks)
    .where(lt(signInLinks.expiresAt, before))
    .orderBy(asc(signInLinks.expiresAt))
    .limit(PRUNED);
  await db.delete(signInLinks).where(inArray(signInLinks.codeHash, oldLinks));
  const oldSessions = db
    .select({ id: tokens.id })
    .from(tokens)
    .where(
      and(
        isNotNull(tokens.parentId),
        lt(tokens.expiresAt, before),
        notInArray(tokens.id, db.select({ id: signInLinks.tokenId }).from(signInLinks)),
      ),
    )
    .orderBy(asc(tokens.expiresAt))
    .limit(PRUNED);
  await db.delete(tokens).where(inArray(tokens.id, oldSessions));
}

/**
 * A session token made from `fromTokenId` (a session's own token stands for the token it came
 * from): the same subject and project claim, expiring with it at the latest. Made from a session
 * (a link its token asked for, or its token pasted), it also needs that session alive, and ends
 * with it: a link a session made before its sign-out signed in afterwards, for 12 new hours.
 */
async function startSession(
  db: Database,
  keys: SigningKeys,
  fromTokenId: string,
): Promise<{ token: string; expiresAt: number } | null> {
  const now = Date.now();
  const alive = (t: typeof tokens.$inferSelect | undefined): t is typeof tokens.$inferSelect =>
    t !== undefined && t.revokedAt === null && t.expiresAt > now;
  let [from] = await db.select().from(tokens).where(eq(tokens.id, fromTokenId));
  let until = now + SESSION_MS;
  if (from?.parentId) {
    if (!alive(from)) return null;
    until = Math.min(until, from.expiresAt);
    [from] = await db.select().from(tokens).where(eq(tokens.id, from.parentId));
  }
  if (!alive(from)) return null;
  await pruneExpired(db, now - EXPIRED_KEPT_MS);
  const expiresAt = Math.min(until, from.expiresAt);
  const issued = await prepareToken(keys, {
    subject: from.subject,
    projectId: from.projectId ?? undefined,
    expiresAt: new Date(expiresAt),
    parentId: from.id,
  });
  await db.insert(tokens).values(issued.row);
  return { token: issued.token, expiresAt };
}

/** Sets the session's cookies; the project cookie remembers which project the pages show. */
export function setSessionCookies(
  c: Context,
  session: { token: string; expiresAt: number; projectId?: string },
): void {
  const secure = new URL(c.req.url).protocol === "https:";
  const maxAge = Math.max(0, Math.floor((session.expiresAt - Date.now()) / 1000));
  const options = {
    path: "/dashboard",
    httpOnly: true,
    sameSite: "Strict",
    secure,
    maxAge,
  } as const;
  setCookie(c, SESSION_COOKIE, session.token, options);
  if (session.projectId) setCookie(c, PROJECT_COOKIE, session.projectId, options);
}

export function setProjectCookie(c: Context, projectId: string): void {
  const secure = new URL(c.req.url).protocol === "https:";
  setCookie(c, PROJECT_COOKIE, projectId, {
    path: "/dashboard",
    httpOnly: true,
    sameSite: "Strict",
    secure,
    maxAge: SESSION_MS / 1000,
  });
}

/** Whether the browser sent a session cookie (readable or not: one that ended still comes). */
export function hasSessionCookie(c: Context): boolean {
  return getCookie(c, SESSION_COOKIE) !== undefined;
}

export function clearSessionCookies(c: Context): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/dashboard" });
  deleteCookie(c, PROJECT_COOKIE, { path: "/dashboard" });
}

/** The request's session, or null (no cookie, or its token expired or was revoked). */
export async function readSession(
  c: Context,
  db: Database,
  publicKeys: PublicKeys,
): Promise<Session | null> {
  const session = await sessionOrWhyNot(c, db, publicKeys);
  return typeof session === "string" ? null : session;
}

/**
 * The session, or why there is none: `none` (no cookie, or its token no longer works) or
 * `no-project` (its token works, but its user was removed from every project they were in).
 */
export async function sessionOrWhyNot(
  c: Context,
  db: Database,
  publicKeys: PublicKeys,
): Promise<Session | "none" | "no-project"> {
  const token = getCookie(c, SESSION_COOKIE);
  if (!token) return "none";
  let principal: Principal;
  try {
    principal = await authenticate(db, publicKeys, `Bearer ${token}`);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    // Ended as its user left their last project (endSessionsOfRemoved): the page says that.
    const user = await verifyJwt(token, publicKeys).then(
      (claims) => claims.sub,
      () => undefined,
    );
    return user && !(await inAnyProject(db, user)) ? "no-project" : "none";
  }
  const open = (await projectsOf(db, principal)).map(({ id, name, role }) => ({ id, name, role }));
  const current = open.find((p) => p.id === getCookie(c, PROJECT_COOKIE)) ?? open[0];
  if (!current) return "no-project";
  const operator = await isOperator(db, principal);
  const projects = open.map(({ id, name }) => ({ id, name }));
  return { principal, token, projectId: current.id, projects, role: current.role, operator };
}

/**
 * For the batch that removes `userId` from a project, after the removal: once they are in no
 * project, their dashboard sessions end (revoked). Before, a session only waited: added again,
 * the user was signed in again by the old cookie, though the page had said the session ended.
 */
export function endSessionsOfRemoved(db: Database, userId: string) {
  return db
    .update(tokens)
    .set({ revokedAt: Date.now() })
    .where(
      and(
        eq(tokens.subject, userId),
        isNotNull(tokens.parentId),
        isNull(tokens.revokedAt),
        sql`not exists (select 1 from ${memberships} where ${memberships.userId} = ${userId})`,
      ),
    );
}

async function inAnyProject(db: Database, userId: string): Promise<boolean> {
  const rows = await db
    .select({ userId: memberships.userId })
    .from(memberships)
    .where(eq(memberships.userId, userId))
    .limit(1);
  return rows.length > 0;
}

/** Ends the session: its token is revoked, so a copy of the cookie is worth nothing. */
export async function endSession(db: Database, session: Session): Promise<void> {
  await db
    .update(tokens)
    .set({ revokedAt: Date.now() })
    .where(eq(tokens.id, session.principal.tokenId));
}
