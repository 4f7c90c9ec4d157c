/**
 * The names of users and service accounts by id: who deployed a version, who made a service
 * account. An id that is neither (a user deleted since) has no entry.
 */
import { inArray } from "drizzle-orm";
import { inParts } from "./in-parts.ts";
import type { Database } from "./index.ts";
import { serviceAccounts, users } from "./schema.ts";

export async function principalNames(
  db: Database,
  ids: Iterable<string>,
): Promise<Map<string, string>> {
  const wanted = [...new Set(ids)];
  const names = new Map<string, string>();
  if (wanted.length === 0) return names;
  const people = await inParts(wanted, (part) =>
    db.select({ id: users.id, name: users.name }).from(users).where(inArray(users.id, part)),
  );
  const accounts = await inParts(wanted, (part) =>
    db
      .select({ id: serviceAccounts.id, name: serviceAccounts.name })
      .from(serviceAccounts)
      .where(inArray(serviceAccounts.id, part)),
  );
  for (const { id, name } of [...people, ...accounts]) names.set(id, name);
  return names;
}
