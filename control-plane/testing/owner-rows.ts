/**
 * Tests of the lists an owner fills by hand, and of the dashboard pages that show them: many
 * rows made at once, and a signed-in dashboard session to read the pages with.
 */
import { newId } from "../../common/ids.ts";
import { memberships, secrets, serviceAccounts, tokens, users } from "../db/schema.ts";
import type { Fixture } from "./fixture.ts";

/** `i` as the rows' names write it: two digits at least, so that names sort as numbers do. */
export const rowNumber = (i: number) => String(i).padStart(2, "0");

/**
 * `n` of each in the project: service accounts `sa-NN` (role member; made `i % spread` ms after
 * `at`, so several share a millisecond when `spread` < `n`), users `user-NN` (members) and
 * secrets `S_NN` (their sealed values unreadable: a list never reads them).
 */
export async function addOwnerRows(
  f: Pick<Fixture, "db" | "owner">,
  projectId: string,
  { n, at, spread = n }: { n: number; at: number; spread?: number },
): Promise<void> {
  const expiresAt = Date.now() + 86_400_000;
  for (let i = 0; i < n; i++) {
    const [sa, tok, user] = [newId("sa"), newId("tok"), newId("usr")];
    const name = rowNumber(i);
    await f.db.batch([
      f.db.insert(tokens).values({ id: tok, subject: sa, projectId, createdAt: at, expiresAt }),
      f.db.insert(serviceAccounts).values({
        id: sa,
        projectId,
        name: `sa-${name}`,
        role: "member",
        tokenId: tok,
        createdBy: f.owner.id,
        createdAt: at + (i % spread),
        expiresAt,
      }),
      f.db.insert(users).values({ id: user, name: `user-${name}`, createdAt: at }),
      f.db.insert(memberships).values({ projectId, userId: user, role: "member" }),
      f.db.insert(secrets).values({
        projectId,
        name: `S_${name}`,
        sealed: "not read by the list",
        updatedBy: f.owner.id,
        createdAt: at,
        updatedAt: at,
      }),
    ]);
  }
}

/** The cookies a response sets, as one Cookie header (a cookie it clears left out). */
export const cookiesOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .filter((c) => !c?.endsWith("="))
    .join("; ");

/**
 * The Cookie header of a dashboard session in the project, signed in with a one-time link made
 * with `token` (the fixture's owner's unless given).
 */
export async function dashboardCookie(
  f: Pick<Fixture, "app" | "call">,
  projectId: string,
  token?: string,
): Promise<string> {
  const link = await f.call(
    "POST",
    `/v2/projects/${projectId}/dashboard-links`,
    token === undefined ? {} : { token },
  );
  const url = new URL(((await link.json()) as { url: string }).url);
  return cookiesOf(await f.app.request(url.pathname + url.search));
}
