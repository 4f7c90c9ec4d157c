/**
 * Host tokens (docs/hosts.md): what a runtime host joins the registry with. Shown once when made;
 * only a hash is kept. Revoking one refuses its hosts from their next heartbeat.
 */
import { and, eq, inArray, isNull, ne, type SQLWrapper, sql } from "drizzle-orm";
import { newId } from "../../common/ids.ts";
import { HOST_TOKEN_PREFIX } from "../../common/protocol/hosts.ts";
import { newSecret, secretHash } from "../../common/same-secret.ts";
import type { Database } from "../db/index.ts";
import { insertIf } from "../db/insert-if.ts";
import { namesMatch } from "../db/names-match.ts";
import { hostApps, hosts, hostTokens } from "../db/schema.ts";
import { ApiError } from "../errors.ts";

/**
 * A new host token: shown once, only its hash kept. Refused (409) while a live token has its
 * name in either case (`a` and `A`: namesMatch), unless `sameName` is "allowed" (the local
 * supervisor's own `local`, which must be made whatever an older home holds): the list, the
 * dashboard and the audit log could not tell two apart. A revoked one frees its name. The check is the insert's own condition, one statement,
 * so two creates at once make one.
 */
export async function createHostToken(
  db: Database,
  input: { name: string; createdBy: string },
  sameName: "refused" | "allowed" = "refused",
): Promise<{ id: string; name: string; token: string; createdAt: number }> {
  const token = newSecret(HOST_TOKEN_PREFIX);
  const row = { id: newId("htk"), name: input.name, createdAt: Date.now() };
  const values = { ...row, tokenHash: await secretHash(token), createdBy: input.createdBy };
  if (sameName === "allowed") {
    await db.insert(hostTokens).values(values);
    return { ...row, token };
  }
  const live = and(namesMatch(hostTokens.name, input.name), isNull(hostTokens.revokedAt));
  const free = sql`not exists (select 1 from ${hostTokens} where ${live})`;
  const [made] = await insertIf(db, hostTokens, values, free).returning({ id: hostTokens.id });
  if (!made) {
    const [other] = await db
      .select({ id: hostTokens.id, name: hostTokens.name })
      .from(hostTokens)
      .where(live);
    const id = other?.id ?? "(revoked since: try again)";
    throw new ApiError(
      "conflict",
      `a host token named '${other?.name ?? input.name}' is live already (${id}): revoke it first (runlet hosts revoke ${id}, or the dashboard's Join tokens tab, under Hosts), or pick another name`,
    );
  }
  return { ...row, token };
}

/** The id of the unrevoked host token `token` is, if any. */
export async function hostTokenId(db: Database, token: string): Promise<string | undefined> {
  if (!token.startsWith(HOST_TOKEN_PREFIX)) return undefined;
  const [row] = await db
    .select({ id: hostTokens.id })
    .from(hostTokens)
    .where(and(eq(hostTokens.tokenHash, await secretHash(token)), isNull(hostTokens.revokedAt)));
  return row?.id;
}

/**
 * Why `token` is refused, for the host's log: the operator at the host learns whether to ask for
 * a new token (revoked) or to check what was pasted (none of this Runlet's). It said only "a
 * runtime host needs a valid host token" for each.
 */
export async function hostTokenRefusal(db: Database, token: string): Promise<string> {
  if (!token) return `${REFUSED}: none was given (RUNLET_HOST_TOKEN); ${MAKE}`;
  if (!token.startsWith(HOST_TOKEN_PREFIX))
    return `${REFUSED}: this is not one (host tokens begin ${HOST_TOKEN_PREFIX}); ${MAKE}`;
  const [row] = await db
    .select({ id: hostTokens.id, name: hostTokens.name })
    .from(hostTokens)
    .where(eq(hostTokens.tokenHash, await secretHash(token)));
  return row
    ? revokedRefusal(row)
    : `${REFUSED}: this one is not known to this control plane (mistyped, or another Runlet's); ${MAKE}`;
}

const REFUSED = "a runtime host needs a valid host token";
const MAKE = "an operator makes one with 'runlet hosts token --name NAME'";
const revokedRefusal = (token: { id: string; name: string }) =>
  `${REFUSED}: this one, '${token.name}' (${token.id}), was revoked; ${MAKE}`;

/**
 * The condition, in one statement, that host token `tokenId` (a value, or a column such as
 * `hosts.tokenId`) is not revoked. A host's registration and heartbeat write under it: their
 * token is checked as the request begins, and a revoke between that check and the write was
 * undone by it (the host `up` again, its replicas counted, under a revoked token, until 15 s of
 * silence made it down).
 */
export const liveToken = (tokenId: SQLWrapper | string) =>
  sql`exists (select 1 from ${hostTokens} where ${hostTokens.id} = ${tokenId} and ${hostTokens.revokedAt} is null)`;

/**
 * The 401 of a host's write that `liveToken` refused: its token (`tokenId`) was revoked after
 * the request's check. Said as `hostTokenRefusal` says it to the next request.
 */
export async function revokedMeanwhile(db: Database, tokenId: string): Promise<ApiError> {
  const [row] = await db
    .select({ id: hostTokens.id, name: hostTokens.name })
    .from(hostTokens)
    .where(eq(hostTokens.id, tokenId));
  return new ApiError("unauthorized", revokedRefusal(row ?? { id: tokenId, name: "?" }));
}

/**
 * Takes a token made elsewhere (the local supervisor's, RUNLET_HOME/host-token) unless its hash
 * is known already; true if it is valid now (false: it was revoked).
 */
export async function adoptHostToken(
  db: Database,
  token: string,
  input: { name: string; createdBy: string },
): Promise<boolean> {
  if (!token.startsWith(HOST_TOKEN_PREFIX)) return false;
  await db
    .insert(hostTokens)
    .values({
      id: newId("htk"),
      name: input.name,
      tokenHash: await secretHash(token),
      createdBy: input.createdBy,
      createdAt: Date.now(),
    })
    .onConflictDoNothing({ target: hostTokens.tokenHash });
  return (await hostTokenId(db, token)) !== undefined;
}

/**
 * Revokes a host token; false if unknown or revoked already. Its hosts are refused from their
 * next heartbeat, and stop: they are `stopped` at once, holding no replica, so no new work goes
 * there meanwhile (before, one stayed `up` until 15 s of silence made it `down`).
 */
export async function revokeHostToken(db: Database, id: string): Promise<boolean> {
  const now = Date.now();
  const revoked = and(eq(hostTokens.id, id), isNull(hostTokens.revokedAt));
  const its = db.select({ id: hosts.id }).from(hosts).where(eq(hosts.tokenId, id));
  const [done] = (await db.batch([
    db.update(hostTokens).set({ revokedAt: now }).where(revoked).returning({ id: hostTokens.id }),
    db.delete(hostApps).where(inArray(hostApps.hostId, its)),
    db
      .update(hosts)
      .set({ state: "stopped", seenAt: now, busy: 0, queued: 0 })
      .where(and(eq(hosts.tokenId, id), ne(hosts.state, "stopped"))),
  ])) as unknown[][];
  return (done?.length ?? 0) > 0;
}

export async function listHostTokens(db: Database) {
  return db
    .select({
      id: hostTokens.id,
      name: hostTokens.name,
      createdBy: hostTokens.createdBy,
      createdAt: hostTokens.createdAt,
      revokedAt: hostTokens.revokedAt,
    })
    .from(hostTokens)
    .orderBy(hostTokens.createdAt);
}
