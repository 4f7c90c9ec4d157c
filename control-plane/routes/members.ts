/**
 * What the routes about a project's users share: the member view, the queries over a user's
 * token, and the last-owner rule (docs/deploy.md, "More users and projects").
 *
 * A user's token is not bound to a project: it is the newest of the user's tokens without a
 * project and without a parent (a dashboard session has one), not revoked. Issuing a new one
 * revokes the others in the same batch, so a user has one token at a time.
 */
import { z } from "@hono/zod-openapi";
import { and, count, eq, inArray, isNull, sql } from "drizzle-orm";
import { keyRetiredAt, type SigningKeys } from "../auth/signing.ts";
import { inParts } from "../db/in-parts.ts";
import type { Database } from "../db/index.ts";
import { memberships, tokens, users } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { projectIdParam } from "../openapi.ts";
import type { PagePosition } from "../page-token.ts";
import { roleSchema } from "./projects.ts";

export const userIdParam = projectIdParam.extend({
  userId: z
    .string()
    .max(64)
    .openapi({ param: { name: "userId", in: "path" }, example: "usr_…" }),
});

export const memberSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    role: roleSchema,
    operator: z.boolean(),
    createdAt: z.string().openapi({ format: "date-time" }),
    tokenExpiresAt: z.string().nullable().openapi({
      format: "date-time",
      description:
        "When the user's current token expires (past if it has); null if they have none (revoked). Never the token.",
    }),
    tokenKeyRetiredAt: z.string().nullable().openapi({
      format: "date-time",
      description:
        "When the signing key of the user's current token was retired (`runlet keys retire`): the token is refused (401) since, and they need a new one (`runlet users token`); null while the key verifies. Worked out from when the token was made.",
    }),
    tokenLastUsedAt: z.string().nullable().openapi({
      format: "date-time",
      description:
        "When that token last authenticated a request to the control plane, to the minute; null if never, or if they have no token.",
    }),
  })
  .openapi("ProjectUser");

export type Member = z.infer<typeof memberSchema>;

/** SQL: the token is a user's own (no project, not a dashboard session), not revoked. */
const liveUserToken = and(
  isNull(tokens.projectId),
  isNull(tokens.parentId),
  isNull(tokens.revokedAt),
);

/** The user's tokens that are theirs alone (no project, not a dashboard session), not revoked. */
export const liveUserTokens = (userId: string | typeof users.id) =>
  and(eq(tokens.subject, userId), liveUserToken);

/**
 * The list's order: owners first, then by name as people read names — Unicode's collation
 * (CLDR root, which English uses as is): "Émile" beside "Emile", before "Zed"; case and accents
 * only break ties —, then by the name's code points, then by id, so each member has one place.
 * SQLite (libSQL, D1) has no such collation ("collate nocase" folds ASCII letters only, and put
 * "É" after "Z"), so the list is ordered here, the same on both, and a page is what follows
 * its token's position in this same order.
 */
const collator = new Intl.Collator("en");
const byCodePoints = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

interface Placed {
  rank: number;
  name: string;
  id: string;
}

function memberOrder(a: Placed, b: Placed): number {
  return (
    a.rank - b.rank ||
    collator.compare(a.name, b.name) ||
    byCodePoints(a.name, b.name) ||
    byCodePoints(a.id, b.id)
  );
}

const rankOf = (role: string) => (role === "owner" ? 0 : 1);

/** A page token's position, as the order reads a member. */
const positionOf = (after: PagePosition): Placed => ({
  rank: Number(after.timestamp),
  name: after.name ?? "",
  id: String(after.id),
});

/** A member's position in the list, for its page tokens. */
export const memberPosition = (m: Member): PagePosition => ({
  timestamp: rankOf(m.role),
  id: m.id,
  name: m.name,
});

/**
 * The project's users as the list shows them; `userId` narrows it to one (or none); `page`, to
 * at most `limit` (-1: all) after a position.
 */
export async function membersOf(
  { db, keys }: { db: Database; keys: SigningKeys },
  projectId: string,
  userId?: string,
  page: { after?: PagePosition; limit: number } = { limit: -1 },
): Promise<Member[]> {
  const members = await db
    .select({
      id: users.id,
      name: users.name,
      operator: users.operator,
      createdAt: users.createdAt,
      role: memberships.role,
    })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(
      and(
        eq(memberships.projectId, projectId),
        userId === undefined ? undefined : eq(memberships.userId, userId),
      ),
    );
  const placed = members
    .map((m) => ({ ...m, rank: rankOf(m.role) }))
    .sort(memberOrder)
    .filter((m) => !page.after || memberOrder(m, positionOf(page.after)) > 0);
  const rows = page.limit < 0 ? placed : placed.slice(0, page.limit);
  const live = await inParts(
    rows.map((r) => r.id),
    (part) =>
      db
        .select({
          subject: tokens.subject,
          createdAt: tokens.createdAt,
          expiresAt: tokens.expiresAt,
          lastUsedAt: tokens.lastUsedAt,
        })
        .from(tokens)
        .where(and(inArray(tokens.subject, part), liveUserToken)),
  );
  // A user's newest live token is theirs (issuing one revokes the others; a race may leave two).
  const newest = new Map<string, (typeof live)[number]>();
  for (const token of live) {
    const seen = newest.get(token.subject);
    if (!seen || token.createdAt > seen.createdAt) newest.set(token.subject, token);
  }
  const iso = (ms: number | null | undefined) => (ms == null ? null : new Date(ms).toISOString());
  return rows.map((r) => {
    const token = newest.get(r.id);
    return {
      id: r.id,
      name: r.name,
      role: r.role,
      operator: r.operator,
      createdAt: new Date(r.createdAt).toISOString(),
      tokenExpiresAt: iso(token?.expiresAt),
      tokenKeyRetiredAt: token ? keyRetiredAt(keys, token.createdAt) : null,
      tokenLastUsedAt: iso(token?.lastUsedAt),
    };
  });
}

/** The member `userId` of the project, or 404. */
export async function memberOr404(
  deps: { db: Database; keys: SigningKeys },
  projectId: string,
  userId: string,
) {
  const [member] = await membersOf(deps, projectId, userId);
  if (!member) {
    throw new ApiError("not_found", `user '${userId}' is not a member of this project`);
  }
  return member;
}

/** The ids of the projects `userId` is in: where acts on their token are recorded. */
export async function projectsOf(db: Database, userId: string): Promise<string[]> {
  const rows = await db
    .select({ projectId: memberships.projectId })
    .from(memberships)
    .where(eq(memberships.userId, userId));
  return rows.map((r) => r.projectId);
}

/** How many of the user's tokens would a new one (or a revocation) revoke. */
export async function liveTokenCount(db: Database, userId: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(tokens).where(liveUserTokens(userId));
  return row?.n ?? 0;
}

/** SQL: the project keeps another owner than `userId` (users only: service accounts do not count). */
export const anotherOwner = (projectId: string, userId: string) =>
  sql`exists (select 1 from ${memberships} where ${memberships.projectId} = ${projectId} and ${memberships.role} = 'owner' and ${memberships.userId} <> ${userId})`;

export function lastOwner(name: string, userId: string, act: string) {
  return new ApiError(
    "conflict",
    `cannot ${act} ${name} (${userId}): they are the project's last owner, and a project needs one. Make another user an owner first (runlet users role <user-id> owner)`,
  );
}
