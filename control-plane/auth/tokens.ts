import { and, eq } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { JWT_ISSUER } from "../../common/consts.ts";
import { newId } from "../../common/ids.ts";
import { importJwks, JwtError, type PublicKeys, signJwt, verifyJwt } from "../../common/jwt.ts";
import type { Database } from "../db/index.ts";
import { memberships, projects, serviceAccounts, tokens, users } from "../db/schema.ts";
import { ApiError, projectDeleted } from "../errors.ts";
import type { SigningKeys } from "./signing.ts";

/** Who is calling: a user, or a service account of one project (with its role there). */
export type Principal =
  | {
      type: "user";
      id: string;
      name: string;
      tokenId: string;
      /** A dashboard session's token (made from the token its holder signed in with). */
      session?: true;
    }
  | {
      type: "service_account";
      id: string;
      name: string;
      tokenId: string;
      projectId: string;
      role: Role;
    };

/**
 * A principal's role in a project. `caller`, a service account's only: it calls the project's
 * apps through the run API (and reads them and their runs, as the run API asks the control plane
 * to), and nothing more: no deploy, no secrets, no dashboard.
 */
export type Role = "owner" | "member" | "caller";

/**
 * Signs a token for `subject`; returns it with the row that records its id (never the token
 * itself), for the caller to insert — alone, or in the batch of the change it belongs to.
 */
export async function prepareToken(
  keys: SigningKeys,
  opts: { subject: string; projectId?: string; expiresAt: Date; parentId?: string },
): Promise<{ token: string; id: string; row: typeof tokens.$inferInsert }> {
  const id = newId("tok");
  const now = Date.now();
  const token = await signJwt(
    {
      iss: JWT_ISSUER,
      sub: opts.subject,
      jti: id,
      iat: Math.floor(now / 1000),
      exp: Math.floor(opts.expiresAt.getTime() / 1000),
      ...(opts.projectId ? { prj: opts.projectId } : {}),
    },
    keys.privateKey,
    keys.kid,
  );
  const row = {
    id,
    subject: opts.subject,
    projectId: opts.projectId ?? null,
    createdAt: now,
    expiresAt: opts.expiresAt.getTime(),
    parentId: opts.parentId ?? null,
  };
  return { token, id, row };
}

/** Signs a token for `subject` and records its id so it can be revoked. */
export async function issueToken(
  db: Database,
  keys: SigningKeys,
  opts: { subject: string; projectId?: string; expiresAt: Date },
): Promise<{ token: string; id: string }> {
  const { token, id, row } = await prepareToken(keys, opts);
  await db.insert(tokens).values(row);
  return { token, id };
}

/** A token's last use is written at most this often (one write a minute per busy token). */
const LAST_USED_EVERY_MS = 60_000;

const parent = alias(tokens, "parent");

/**
 * Turns an Authorization header into a principal, or throws 401: missing header, another scheme,
 * a bad signature, an expired or a revoked token all end here — and a dashboard session's
 * token whose parent (the token its holder signed in with) was revoked.
 */
export async function authenticate(
  db: Database,
  publicKeys: PublicKeys,
  header: string | undefined,
): Promise<Principal> {
  if (!header) throw new ApiError("unauthorized", "missing Authorization header");
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1])
    throw new ApiError("unauthorized", "Authorization header must be 'Bearer <token>'");
  let claims: Awaited<ReturnType<typeof verifyJwt>>;
  try {
    claims = await verifyJwt(match[1], publicKeys);
  } catch (err) {
    if (err instanceof JwtError) throw new ApiError("unauthorized", err.message);
    throw err;
  }
  const [row] = await db
    .select({
      revokedAt: tokens.revokedAt,
      parentId: tokens.parentId,
      parentRevokedAt: parent.revokedAt,
      lastUsedAt: tokens.lastUsedAt,
      userName: users.name,
      account: {
        name: serviceAccounts.name,
        projectId: serviceAccounts.projectId,
        role: serviceAccounts.role,
      },
    })
    .from(tokens)
    .leftJoin(parent, eq(parent.id, tokens.parentId))
    .leftJoin(users, eq(users.id, tokens.subject))
    .leftJoin(serviceAccounts, eq(serviceAccounts.id, tokens.subject))
    .where(and(eq(tokens.id, claims.jti), eq(tokens.subject, claims.sub)));
  if (!row || (row.userName === null && row.account === null))
    throw new ApiError("unauthorized", "token is not recognised");
  if (row.revokedAt !== null || row.parentRevokedAt !== null)
    throw new ApiError("unauthorized", "token has been revoked");
  const now = Date.now();
  if (row.lastUsedAt === null || now - row.lastUsedAt >= LAST_USED_EVERY_MS)
    await db.update(tokens).set({ lastUsedAt: now }).where(eq(tokens.id, claims.jti));
  if (row.account) {
    return { type: "service_account", id: claims.sub, tokenId: claims.jti, ...row.account };
  }
  const session = row.parentId !== null ? { session: true as const } : {};
  return {
    type: "user",
    id: claims.sub,
    name: row.userName ?? "",
    tokenId: claims.jti,
    ...session,
  };
}

export function publicKeysOf(keys: SigningKeys): Promise<PublicKeys> {
  return importJwks(keys.jwks);
}

/**
 * A 404's words for a project that does not exist, and where the ids are: it was only "project
 * 'prj_…' not found", and a RUNLET_PROJECT of a deleted project or with a typo left the user to
 * find the list. One named by its name where its id goes (`RUNLET_PROJECT=default`,
 * `/v4/default/hello/run`: the README calls it "a project called default") is told so.
 */
function projectNotFound(projectId: string): string {
  const where = "GET /v2/projects (runlet projects) lists yours with their ids";
  if (projectId.startsWith("prj_")) return `project '${projectId}' not found: ${where}`;
  return `project '${projectId}' not found: a project is named by its id (prj_…), not by its name; ${where}`;
}

/**
 * The principal's role in a project, or null when they have none there (a 403 for the caller to
 * raise). Throws 404 when the project does not exist or was deleted.
 */
export async function roleIn(
  db: Database,
  principal: Principal,
  projectId: string,
): Promise<Role | null> {
  const [row] = await db
    .select({ role: memberships.role, deletedAt: projects.deletedAt })
    .from(projects)
    .leftJoin(
      memberships,
      and(eq(memberships.projectId, projects.id), eq(memberships.userId, principal.id)),
    )
    .where(eq(projects.id, projectId));
  if (!row) throw new ApiError("not_found", projectNotFound(projectId));
  if (row.deletedAt !== null) throw new ApiError("not_found", projectDeleted(projectId));
  if (principal.type === "service_account") {
    return principal.projectId === projectId ? principal.role : null;
  }
  return row.role;
}
