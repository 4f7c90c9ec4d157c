/**
 * For the tests of the control plane's Workers entry: a user who owns a new project, written
 * straight into D1, and tokens for them signed by the key a test names.
 */
import { drizzle } from "drizzle-orm/d1";
import { newId } from "../../common/ids.ts";
import { type StoredKey, signingKeysFrom } from "../auth/signing.ts";
import { issueToken } from "../auth/tokens.ts";
import type { Database } from "../db/index.ts";
import * as schema from "../db/schema.ts";

export interface D1Owner {
  db: Database;
  userId: string;
  projectId: string;
  /** A token of the owner's, valid an hour, signed by `key`. */
  tokenSignedBy(key: StoredKey): Promise<string>;
}

/** Makes user `name`, owner of a new project `project`, on `d1`. */
export async function d1Owner(d1: D1Database, name: string, project: string): Promise<D1Owner> {
  const db = drizzle(d1, { schema }) as unknown as Database;
  const userId = newId("usr");
  const projectId = newId("prj");
  await db.batch([
    db.insert(schema.users).values({ id: userId, name, createdAt: Date.now() }),
    db.insert(schema.projects).values({ id: projectId, name: project, createdAt: Date.now() }),
    db.insert(schema.memberships).values({ projectId, userId, role: "owner" }),
  ]);
  const tokenSignedBy = async (key: StoredKey) => {
    const expiresAt = new Date(Date.now() + 3_600_000);
    return (await issueToken(db, await signingKeysFrom(key), { subject: userId, expiresAt })).token;
  };
  return { db, userId, projectId, tokenSignedBy };
}
