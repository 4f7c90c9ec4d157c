/**
 * The lists an owner fills by hand — service accounts, a project's users, secrets — on libSQL
 * and on D1: every row without `limit` and `nextToken`, as before they had pages (what the CLI
 * and the dashboard read), and the same rows in the same order page by page with them; a bad
 * `limit` or token is 400 `{message}`.
 */
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import type { Database } from "../db/index.ts";
import { memberships, secrets, serviceAccounts, tokens, users } from "../db/schema.ts";
import { MAX_SECRETS_BYTES, sealedBytes } from "../secrets.ts";
import { auditRows } from "./audit-rows.ts";
import { createFixture, type Fixture } from "./fixture.ts";
import { addOwnerRows, dashboardCookie, rowNumber } from "./owner-rows.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field.
type Json = Record<string, any>;

/** Each list: its path, the field of its rows, what identifies a row in it. */
const LISTS = [
  { path: "service-accounts", field: "serviceAccounts", key: (r: Json) => r.id },
  { path: "users", field: "users", key: (r: Json) => r.id },
  { path: "secrets", field: "secrets", key: (r: Json) => r.name },
] as const;

export function ownerListsCases(open: () => Promise<Database>) {
  let f: Fixture;
  const get = async (path: string, query = "", projectId = f.projectId) => {
    const res = await f.call("GET", `/v2/projects/${projectId}/${path}${query}`);
    return { status: res.status, body: (await res.json()) as Json };
  };

  beforeAll(async () => {
    f = await createFixture(await open());
    const at = Date.parse("2026-11-01T00:00:00Z");
    const expiresAt = Date.now() + 86_400_000;
    // Seven of each beside the fixture's own; several made in the same millisecond, and users
    // whose names differ only in case, or not at all, or begin with a letter outside ASCII: the
    // order still has one place for each.
    for (let i = 0; i < 7; i++) {
      const sa = newId("sa");
      const tok = newId("tok");
      await f.db.batch([
        f.db.insert(tokens).values({
          id: tok,
          subject: sa,
          projectId: f.projectId,
          createdAt: at,
          expiresAt,
        }),
        f.db.insert(serviceAccounts).values({
          id: sa,
          projectId: f.projectId,
          name: `ci-${i}`,
          role: "member",
          tokenId: tok,
          createdBy: f.owner.id,
          createdAt: at + (i % 3),
          expiresAt,
        }),
      ]);
      const user = newId("usr");
      const name = ["ada", "Ada", "bob", "Émile", "ada", "Zed", "carl"][i] as string;
      await f.db.batch([
        f.db.insert(users).values({ id: user, name, createdAt: at }),
        f.db
          .insert(memberships)
          .values({ projectId: f.projectId, userId: user, role: i === 6 ? "owner" : "member" }),
      ]);
      const put = await f.call("PUT", `/v2/projects/${f.projectId}/secrets/S_${(i * 5) % 7}`, {
        body: { value: `v${i}` },
      });
      expect(put.status).toBe(204);
    }
  });

  describe.each(LISTS)("GET /v2/projects/{id}/$path", ({ path, field, key }) => {
    it("gives every row without `limit`, and the same rows in the same order page by page", async () => {
      const all = await get(path);
      expect(all.status).toBe(200);
      expect(all.body.hasMore).toBe(false);
      expect(all.body).not.toHaveProperty("nextPageToken");
      const keys = all.body[field].map(key);
      expect(keys.length).toBeGreaterThanOrEqual(7);
      expect(new Set(keys).size).toBe(keys.length);

      const paged: unknown[] = [];
      let page = await get(path, "?limit=3");
      for (let i = 0; i < 10; i++) {
        expect(page.status).toBe(200);
        expect(page.body[field].length).toBeLessThanOrEqual(3);
        paged.push(...page.body[field].map(key));
        if (!page.body.nextPageToken) break;
        expect(page.body.hasMore).toBe(true);
        page = await get(path, `?limit=3&nextToken=${page.body.nextPageToken}`);
      }
      expect(paged).toEqual(keys);
      expect(page.body.hasMore).toBe(false);
      // A page that holds exactly the rest says there is no more.
      const exact = await get(path, `?limit=${keys.length}`);
      expect(exact.body[field].map(key)).toEqual(keys);
      expect(exact.body.hasMore).toBe(false);
      expect(exact.body).not.toHaveProperty("nextPageToken");
    });

    it("refuses a bad `limit`, a garbled token or another list's token with 400 {message}", async () => {
      for (const query of ["?limit=0", "?limit=201", "?limit=x", "?nextToken=garbled", "?o=1"]) {
        const res = await get(path, query);
        expect(res.status, query).toBe(400);
        expect(typeof res.body.message, query).toBe("string");
      }
      const other = LISTS.find((l) => l.path !== path)?.path as string;
      const token = (await get(other, "?limit=1")).body.nextPageToken;
      const elsewhere = await get(path, `?nextToken=${token}`);
      expect(elsewhere.status).toBe(400);
      expect(elsewhere.body.message).toMatch(/other filters/);
      const project = await f.addProject();
      const mine = (await get(path, "?limit=1")).body.nextPageToken;
      expect((await get(path, `?nextToken=${mine}`, project)).status).toBe(400);
    });
  });

  it("orders users owners first, then by name as people read it, then by id", async () => {
    const { body } = await get("users");
    const rows = body.users as Json[];
    // "Émile" with the E's: `collate nocase` folded ASCII letters only and put it after "Zed".
    // Case breaks a tie of letters (lower first), and the id one of the very same name.
    expect(rows.map((u) => u.name)).toEqual([
      "carl",
      "Olive Owner",
      "ada",
      "ada",
      "Ada",
      "bob",
      "Émile",
      "Mel Member",
      "Zed",
    ]);
    const ids = rows.slice(2, 4).map((u) => u.id);
    expect(ids).toEqual([...ids].sort());
  });

  describe("the dashboard, 50 a page", () => {
    /** What a page lists, and the address of its next page under the pager `label`. */
    const read = (html: string, cell: RegExp, label: string) => {
      const names = [...html.matchAll(cell)].map((m) => m[1] ?? "");
      const nav = new RegExp(`aria-label="${label}">(.*?)</nav>`, "s").exec(html)?.[1] ?? "";
      const next = /<a href="([^"]+)" rel="next">/.exec(nav)?.[1]?.replaceAll("&amp;", "&");
      return { names, next };
    };

    it("shows every service account, user and secret of a project page by page", async () => {
      const projectId = await f.addProject();
      const n = 61;
      await addOwnerRows(f, projectId, { n, at: Date.parse("2026-11-02T00:00:00Z"), spread: 7 });
      const cookie = await dashboardCookie(f, projectId);
      const walk = async (first: string, cell: RegExp, label: string) => {
        const seen: string[] = [];
        let path: string | undefined = first;
        for (let i = 0; path && i < 5; i++) {
          const res = await f.app.request(path, { headers: { cookie } });
          expect(res.status, path).toBe(200);
          const page = read(await res.text(), cell, label);
          expect(page.names.length, path).toBeLessThanOrEqual(50);
          seen.push(...page.names);
          path = page.next;
        }
        return seen;
      };
      const accounts = await walk(
        "/dashboard/api-keys",
        /<td class="name">([^<]+)<div class="hint mono"><a href="\/dashboard\/audit-log\?actor=sa_/g,
        "Pages of service accounts",
      );
      expect(accounts).toHaveLength(n);
      expect(new Set(accounts).size).toBe(n);
      const people = await walk(
        "/dashboard/api-keys",
        /<td class="name" title="usr_[^"]+">([^<]+)<\/td>/g,
        "Pages of users",
      );
      expect(people).toEqual([
        "Olive Owner",
        ...Array.from({ length: n }, (_, i) => `user-${rowNumber(i)}`),
      ]);
      const names = await walk(
        "/dashboard/secrets",
        /<td class="mono name">([^<]+)<\/td>/g,
        "Pages",
      );
      expect(names).toEqual(Array.from({ length: n }, (_, i) => `S_${rowNumber(i)}`));
    });
  });

  it("refuses a secret that would take the project's secrets past 1 MiB in all, with 409", async () => {
    const projectId = await f.addProject();
    const put = async (name: string, bytes: number) => {
      const res = await f.call("PUT", `/v2/projects/${projectId}/secrets/${name}`, {
        body: { value: "x".repeat(bytes) },
      });
      return { status: res.status, body: (await res.json().catch(() => null)) as Json };
    };
    // Each counts its name, its value and 10 bytes: these 15 of 64 KiB take 983,270 bytes.
    for (let i = 0; i < 15; i++) expect((await put(`BIG_${i}`, 65_536)).status).toBe(204);
    const refused = await put("BIG_15", 65_536);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/1,025 KiB .* over the 1,024 KiB/);
    // 1 MiB less 983,270 leaves 65,306: "EXACT" (5 bytes) and 10 more leave 65,291 for a value.
    expect((await put("EXACT", 65_292)).status).toBe(409);
    expect((await put("EXACT", 65_291)).status).toBe(204);
    const listed = await get("secrets", "", projectId);
    expect(listed.body.secrets.map((s: Json) => s.name)).not.toContain("BIG_15");
    // Full to the byte: replacing one counts it once; deleting one makes room again.
    expect((await put("BIG_3", 65_536)).status).toBe(204);
    expect((await put("SMALL", 1)).status).toBe(409);
    const gone = await f.call("DELETE", `/v2/projects/${projectId}/secrets/BIG_0`);
    expect(gone.status).toBe(204);
    expect((await put("BIG_0", 65_536)).status).toBe(204);
    // Past the bound (a project from before it): a secret may shrink, not grow.
    await f.db.insert(secrets).values({
      projectId,
      name: "OLD",
      sealed: "A".repeat(88_000), // about 65 KiB sealed
      updatedBy: f.owner.id,
      createdAt: Date.now(),
      updatedAt: Date.now(),
    });
    expect((await put("BIG_1", 10)).status).toBe(204);
    expect((await put("BIG_1", 20)).status).toBe(409);
  });

  it("keeps writes at the same moment that together pass 1 MiB at or under it, each on the record", async () => {
    const projectId = await f.addProject();
    const put = (name: string, bytes: number) =>
      f.call("PUT", `/v2/projects/${projectId}/secrets/${name}`, {
        body: { value: "x".repeat(bytes) },
      });
    for (let i = 0; i < 15; i++) expect((await put(`BIG_${i}`, 65_536)).status).toBe(204);
    // 65,306 bytes left: each of these six (20,016 bytes) fits alone, three fit together. On D1
    // (and a libsql:// server) their reads and writes interleave; a libSQL file runs each
    // request's statements without a pause between them, so there this guards the same rule.
    const names = Array.from({ length: 6 }, (_, i) => `RACE_${i}`);
    const answers = await Promise.all(names.map((name) => put(name, 20_000)));
    const statuses = answers.map((res) => res.status);
    expect(statuses.filter((s) => s === 204)).toHaveLength(3);
    expect(statuses.filter((s) => s === 409)).toHaveLength(3);
    const [total] = await f.db
      .select({ bytes: sealedBytes })
      .from(secrets)
      .where(eq(secrets.projectId, projectId));
    expect(Number(total?.bytes)).toBeLessThanOrEqual(MAX_SECRETS_BYTES);
    const stored = names.filter((_, i) => statuses[i] === 204);
    const listed = (await get("secrets", "", projectId)).body.secrets.map((s: Json) => s.name);
    expect(listed.filter((n: string) => n.startsWith("RACE_")).sort()).toEqual(stored);
    // Each write on the record with its outcome: a success only for a value that was stored.
    const entries = (await auditRows(f.db, projectId)).filter((r) =>
      r.targetId.startsWith("RACE_"),
    );
    const outcomes = Object.fromEntries(entries.map((r) => [r.targetId, r.outcome]));
    expect(entries).toHaveLength(6);
    expect(outcomes).toEqual(
      Object.fromEntries(names.map((n, i) => [n, statuses[i] === 204 ? "success" : "failure"])),
    );
  });

  it("records one of two writes at once of a new secret as its creation, the other as a replacement", async () => {
    const projectId = await f.addProject();
    const put = (value: string) =>
      f.call("PUT", `/v2/projects/${projectId}/secrets/TWIN`, { body: { value } });
    const answers = await Promise.all([put("one"), put("two")]);
    expect(answers.map((res) => res.status)).toEqual([204, 204]);
    const created = (await auditRows(f.db, projectId))
      .filter((r) => r.action === "secrets.write")
      .map((r) => (r.metadata as { created?: boolean }).created);
    expect(created.sort()).toEqual([false, true]);
  });
}
