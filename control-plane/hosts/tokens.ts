/**
 * Host tokens (docs/hosts.md): what a runtime host joins the registry with. Shown once when made;
 * only a hash is kept. Revoking one refuses its hosts from their next heartbeat.
 */
import { and, eq, isNull } from "drizzle-orm";
import { newId } from "../../common/ids.ts";
import { HOST_TOKEN_PREFIX } from "../../common/protocol/hosts.ts";
import { newSecret, secretHash } from "../../common/same-secret.ts";
import type { Database } from "../db/index.ts";
import { hostTokens } from "../db/schema.ts";

/** A new host token: shown once, only its hash kept. */
export async function createHostToken(
  db: Database,
  input: { name: string; createdBy: string },
): Promise<{ id: string; name: string; token: string; createdAt: number }> {
  const token = newSecret(HOST_TOKEN_PREFIX);
  const row = { id: newId("htk"), name: input.name, createdAt: Date.now() };
  await db.insert(hostTokens).values({
    ...row,
    tokenHash: await secretHash(token),
    createdBy: input.createdBy,
  });
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

/** Revokes a host token; its hosts are refused from their next heartbeat. False if unknown. */
export async function revokeHostToken(db: Database, id: string): Promise<boolean> {
  const revoked = await db
    .update(hostTokens)
    .set({ revokedAt: Date.now() })
    .where(and(eq(hostTokens.id, id), isNull(hostTokens.revokedAt)))
    .returning({ id: hostTokens.id });
  return revoked.length > 0;
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
