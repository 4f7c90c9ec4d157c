/**
 * The audit-log and authentication cases, written once and run on every database the control
 * plane supports: `audit-log.libsql.test.ts` (Node, a libSQL file) and `audit-log.d1.test.ts`
 * (workerd, a D1 binding with the same migrations).
 */
import { eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import { generateSigningKey, importPrivateKey, signJwt } from "../../common/jwt.ts";
import type { AuditAction } from "../audit/actions.ts";
import { type AuditEntry, auditRow } from "../audit/record.ts";
import { issueToken } from "../auth/tokens.ts";
import type { Database } from "../db/index.ts";
import { auditLog, memberships, tokens } from "../db/schema.ts";
import { createFixture, type Fixture } from "./fixture.ts";

const DAY = 86_400_000;

type Page = {
  logs: { id: string; timestamp: string; action: string; outcome: string; actor: { id: string } }[];
  hasMore: boolean;
  nextPageToken?: string;
  retentionDays: number;
  message?: string;
};

/** An audit row as the control plane writes it, with the given time and fields. */
export function entryAt(projectId: string, timestamp: number, over: Partial<AuditEntry> = {}) {
  return auditRow({
    id: newId("log", timestamp),
    projectId,
    timestamp,
    action: "apps.deploy" as const,
    actorType: "user" as const,
    actorId: "usr_seed",
    actorName: "Seed",
    outcome: "success" as const,
    targetType: "app",
    targetId: "hello",
    requestId: newId("req", timestamp),
    ip: null,
    userAgent: null,
    metadata: {},
    ...over,
  });
}

/**
 * Rows in the order the audit log serves them: newest first, and entries of one millisecond
 * latest written first (`seed` writes them in array order).
 */
export function newestFirst<T extends { timestamp: number }>(rows: T[]): T[] {
  return rows
    .map((row, written) => ({ row, written }))
    .sort((a, b) => b.row.timestamp - a.row.timestamp || b.written - a.written)
    .map(({ row }) => row);
}

/** Inserts rows in chunks (D1 limits the bound parameters of one statement). */
export async function seed(db: Database, rows: (typeof auditLog.$inferInsert)[]) {
  for (let i = 0; i < rows.length; i += 5) await db.insert(auditLog).values(rows.slice(i, i + 5));
}

export function auditLogCases(open: () => Promise<Database>) {
  let f: Fixture;
  const page = async (projectId: string, query = "", token = f.owner.token) => {
    const res = await f.call(
      "GET",
      `/v2/projects/${projectId}/audit-log${query ? `?${query}` : ""}`,
      {
        token,
      },
    );
    return { status: res.status, body: (await res.json()) as Page };
  };

  beforeAll(async () => {
    f = await createFixture(await open());
  });

  describe("audit log: 400 for every malformed parameter, naming it", () => {
    const cases: [string, RegExp][] = [
      ["limit=0", /^limit: /],
      ["limit=201", /^limit: /],
      ["limit=1.5", /^limit: /],
      ["limit=", /^limit: /],
      ["limit=-1", /^limit: /],
      ["limit=abc", /^limit: /],
      ["limit=%205", /^limit: /],
      ["limit=1e2", /^limit: /],
      ["limit=05", /^limit: /],
      ["from=yesterday", /^from: must be an RFC 3339/],
      ["from=2026-13-01T00:00:00Z", /^from: /],
      ["from=2026-11-22", /^from: /],
      ["from=2026-02-30T00:00:00Z", /^from: /],
      ["from=2026-11-22T10:00:00", /^from: /],
      ["to=2026-11-22T10:00:00", /^to: /],
      // A lower-case t and z are RFC 3339's (§5.6); an offset is still needed.
      ["from=2026-11-22t10:00:00", /^from: must be an RFC 3339/],
      ["from=2026-11-22t25:00:00z", /^from: must be an RFC 3339/],
      // An offset written with a bare '+' (curl, a hand-made link) arrives as a space.
      ["from=2026-11-22T10:00:00+01:00", /^from: .*a '\+' in a query string reads as a space/],
      ["to=now", /^to: /],
      ["outcome=maybe", /^outcome: must be success or failure/],
      ["outcome=", /^outcome: /],
      // A near miss is named (it listed every action, and which was meant went unsaid).
      ["action=secret.read", /^action: must be one of .*\(did you mean 'secrets\.read'\?\)$/],
      ["action=nothing.like.it", /^action: must be one of [a-z_., ]+$/],
      ["actor=", /^actor: /],
      ["colour=red", /unknown query parameter 'colour'/],
      ["limit=5&limit=6", /^limit: given more than once$/],
      ["limit=5&limit=5", /^limit: given more than once$/],
      ["action=apps.deploy&action=secrets.read", /^action: given more than once$/],
      ["outcome=success&outcome=failure", /^outcome: given more than once$/],
      ["from=2026-11-22T10:00:00Z&from=2026-11-22T11:00:00Z", /^from: given more than once$/],
      ["nextToken=garbage", /^nextToken is not a page token/],
      ["from=2026-11-22T10:00:00Z&to=2026-11-22T09:00:00Z", /from must not be later than to/],
    ];
    it.each(cases)("%s", async (query, message) => {
      const { status, body } = await page(f.projectId, query);
      expect(status).toBe(400);
      // The spec's error body: `{message}` (with our closed `code` beside it), nothing else.
      expect(body).toEqual({ message: expect.any(String), code: "bad_request" });
      expect(body.message).toMatch(message);
    });
  });

  describe("audit log: page tokens are tamper-evident and bound to their filters", () => {
    let token: string;
    let projectId: string;
    beforeAll(async () => {
      projectId = await f.addProject();
      const now = Date.now();
      await seed(
        f.db,
        Array.from({ length: 6 }, (_, i) =>
          entryAt(projectId, now - i * 1000, { outcome: "failure" }),
        ),
      );
      const first = await page(projectId, "limit=2&outcome=failure");
      expect(first.body.nextPageToken).toBeDefined();
      token = first.body.nextPageToken as string;
    });

    it("continues with the same filters", async () => {
      const next = await page(projectId, `limit=2&outcome=failure&nextToken=${token}`);
      expect(next.status).toBe(200);
      expect(next.body.logs).toHaveLength(2);
    });

    // Flips one character in the middle of a token part: never the last one, whose low bits are
    // padding in base64url that a decoder may ignore (the forged token would then be the same).
    const flip = (t: string, part: 0 | 1) => {
      const parts = t.split(".");
      const text = parts[part] ?? "";
      const i = Math.floor(text.length / 2);
      parts[part] = `${text.slice(0, i)}${text[i] === "A" ? "B" : "A"}${text.slice(i + 1)}`;
      return parts.join(".");
    };
    it.each([
      ["a flipped payload character", (t: string) => flip(t, 0)],
      ["a flipped signature character", (t: string) => flip(t, 1)],
      ["a missing signature", (t: string) => t.split(".")[0] ?? ""],
      ["an extra part", (t: string) => `${t}.x`],
      ["a signature that is not base64url", (t: string) => `${t.split(".")[0]}.@@@`],
    ])("refuses %s", async (_, forge) => {
      const res = await page(
        projectId,
        `limit=2&outcome=failure&nextToken=${encodeURIComponent(forge(token))}`,
      );
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/nextToken/);
    });

    it.each([
      ["outcome", "limit=2&outcome=success"],
      ["no outcome", "limit=2"],
      ["action", "limit=2&outcome=failure&action=apps.deploy"],
      ["actor", "limit=2&outcome=failure&actor=usr_seed"],
      ["from", `limit=2&outcome=failure&from=${new Date(Date.now() - DAY).toISOString()}`],
      ["to", `limit=2&outcome=failure&to=${new Date(Date.now() + DAY).toISOString()}`],
    ])("refuses the token replayed with another %s", async (_, query) => {
      const res = await page(projectId, `${query}&nextToken=${token}`);
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/nextToken was issued for other filters/);
    });

    it("refuses another project's token", async () => {
      const res = await page(f.projectId, `limit=2&outcome=failure&nextToken=${token}`);
      expect(res.status).toBe(400);
    });
  });

  describe("audit log: who may read it", () => {
    it.each([
      ["no Authorization header", null, "missing Authorization header"],
      ["another scheme", "Basic dXNlcjpwYXNz", "Authorization header must be 'Bearer <token>'"],
      ["a token that is not a JWT", "Bearer garbage", "token is not a JWT"],
    ])("401 for %s", async (_, header, message) => {
      const res = await f.call("GET", `/v2/projects/${f.projectId}/audit-log`, {
        token: null,
        headers: header ? { authorization: header } : {},
      });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ message, code: "unauthorized" });
    });

    it("401 for a token signed by another key", async () => {
      const other = await generateSigningKey();
      const now = Math.floor(Date.now() / 1000);
      const forged = await signJwt(
        { iss: "runlet", sub: f.owner.id, jti: "tok_x", iat: now, exp: now + 60 },
        await importPrivateKey(other.privateJwk),
        other.kid,
      );
      const { status, body } = await page(f.projectId, "", forged);
      expect(status).toBe(401);
      expect(body.message).toBe("token was signed by an unknown key");
    });

    it("401 for an expired and for a revoked token", async () => {
      const expired = await issueToken(f.db, f.deps.keys, {
        subject: f.owner.id,
        expiresAt: new Date(Date.now() - 1000),
      });
      expect((await page(f.projectId, "", expired.token)).body.message).toBe("token has expired");
      const revoked = await issueToken(f.db, f.deps.keys, {
        subject: f.owner.id,
        expiresAt: new Date(Date.now() + DAY),
      });
      await f.db.update(tokens).set({ revokedAt: Date.now() }).where(eq(tokens.id, revoked.id));
      const res = await page(f.projectId, "", revoked.token);
      expect(res.status).toBe(401);
      expect(res.body.message).toBe("token has been revoked");
    });

    it("403 for a member and an outsider, 404 for a project that does not exist", async () => {
      const cases = [
        [
          f.projectId,
          f.member.token,
          403,
          `only the project owner may do this: your role in it is member (an owner may make you one: runlet users role ${f.member.id} owner)`,
        ],
        [f.projectId, f.outsider.token, 403, `you are not a member of project '${f.projectId}'`],
        [
          "prj_nope",
          f.owner.token,
          404,
          "project 'prj_nope' not found: GET /v2/projects (runlet projects) lists yours with their ids",
        ],
      ] as const;
      for (const [projectId, token, status, message] of cases) {
        const res = await page(projectId, "", token);
        expect(res.status).toBe(status);
        expect(res.body).toEqual({ message, code: status === 403 ? "forbidden" : "not_found" });
      }
    });

    it("lets an owner service account read, refuses a member one and another project's", async () => {
      const projectId = await f.addProject();
      const account = async (project: string, role: "owner" | "member") => {
        const res = await f.call("POST", `/v2/projects/${project}/service-accounts`, {
          body: { name: `ci-${role}`, role, expiresAt: new Date(Date.now() + DAY).toISOString() },
        });
        expect(res.status).toBe(201);
        return (await res.json()) as { id: string; token: string };
      };
      const owner = await account(projectId, "owner");
      const member = await account(projectId, "member");
      const elsewhere = await account(f.projectId, "owner");
      expect((await page(projectId, "", owner.token)).status).toBe(200);
      expect((await page(projectId, "", member.token)).status).toBe(403);
      expect((await page(projectId, "", elsewhere.token)).status).toBe(403);
      // A revoked service account's token stops working: 401.
      const revoke = await f.call(
        "DELETE",
        `/v2/projects/${projectId}/service-accounts/${owner.id}`,
      );
      expect(revoke.status).toBe(204);
      const after = await page(projectId, "", owner.token);
      expect(after.status).toBe(401);
    });

    it("records a member's refused read as an audit_log.read failure the owner can see", async () => {
      const projectId = await f.addProject();
      await f.db.insert(memberships).values({
        projectId,
        userId: f.member.id,
        role: "member",
      });
      expect((await page(projectId, "", f.member.token)).status).toBe(403);
      const { body } = await page(projectId, "action=audit_log.read");
      expect(body.logs).toMatchObject([
        { action: "audit_log.read", outcome: "failure", actor: { id: f.member.id } },
      ]);
    });
  });

  describe("audit log: order, pages, filters and the retention window", () => {
    it("is newest first with ties broken by write order, 50 by default, 200 at most", async () => {
      const projectId = await f.addProject();
      const now = Date.now();
      // 230 entries over 33 distinct milliseconds, seven sharing each: pages of 50 and of 200
      // both end inside a millisecond, so the write order must settle where the next page starts.
      const rows = Array.from({ length: 230 }, (_, i) =>
        entryAt(projectId, now - 10_000 - Math.floor(i / 7)),
      );
      await seed(f.db, rows);
      const served = newestFirst(rows).map((r) => ({
        timestamp: new Date(r.timestamp).toISOString(),
        id: r.id,
      }));

      const pages: Page[] = [];
      let next: string | undefined;
      do {
        const res = await page(projectId, next ? `nextToken=${next}` : "");
        expect(res.status).toBe(200);
        pages.push(res.body);
        next = res.body.nextPageToken;
      } while (next && pages.length < 10);
      expect(pages.map((p) => p.logs.length)).toEqual([50, 50, 50, 50, 30]);
      expect(pages.map((p) => p.hasMore)).toEqual([true, true, true, true, false]);
      expect(pages.at(-1)).not.toHaveProperty("nextPageToken");
      const walked = pages.flatMap((p) =>
        p.logs.map((l) => ({ timestamp: l.timestamp, id: l.id })),
      );
      expect(walked).toEqual(served);

      const max = await page(projectId, "limit=200");
      expect(max.body.logs.map((l) => l.id)).toEqual(served.slice(0, 200).map((r) => r.id));
      expect(max.body.hasMore).toBe(true);
      const rest = await page(projectId, `limit=200&nextToken=${max.body.nextPageToken}`);
      expect(rest.body.logs.map((l) => l.id)).toEqual(served.slice(200).map((r) => r.id));
      expect(rest.body.hasMore).toBe(false);
      expect(rest.body).not.toHaveProperty("nextPageToken");
    });

    it("clamps from to the plan's window and reports retentionDays per plan", async () => {
      for (const [plan, days] of [
        ["hobby", 7],
        ["pro", 90],
        ["enterprise", 365],
      ] as const) {
        const projectId = await f.addProject(plan);
        const now = Date.now();
        await seed(f.db, [
          entryAt(projectId, now - (days - 1) * DAY, { targetId: "inside" }),
          entryAt(projectId, now - (days + 1) * DAY, { targetId: "outside" }),
        ]);
        const from = new Date(now - 2 * days * DAY).toISOString();
        // With a `from` before the window, and without one (the window's start by default).
        for (const query of [`from=${from}`, ""]) {
          const { status, body } = await page(projectId, query);
          expect(status).toBe(200);
          expect(body.retentionDays).toBe(days);
          expect(body.hasMore).toBe(false);
          expect(
            body.logs.map((l) => (l as unknown as { target: { id: string } }).target.id),
          ).toEqual(["inside"]);
        }
      }
    });

    it("gives an empty page for a window wholly before retention", async () => {
      const projectId = await f.addProject();
      const now = Date.now();
      await seed(f.db, [entryAt(projectId, now - 20 * DAY)]);
      const from = new Date(now - 30 * DAY).toISOString();
      const to = new Date(now - 10 * DAY).toISOString();
      const { status, body } = await page(projectId, `from=${from}&to=${to}`);
      expect(status).toBe(200);
      expect(body).toEqual({ logs: [], hasMore: false, retentionDays: 7 });
    });

    it("includes both bounds of the window", async () => {
      const projectId = await f.addProject();
      const t = Date.now() - 3_600_000;
      await seed(f.db, [
        entryAt(projectId, t - 1),
        entryAt(projectId, t),
        entryAt(projectId, t + 1000),
        entryAt(projectId, t + 1001),
      ]);
      const from = new Date(t).toISOString();
      const to = new Date(t + 1000).toISOString();
      const { body } = await page(projectId, `from=${from}&to=${to}`);
      expect(body.logs.map((l) => Date.parse(l.timestamp))).toEqual([t + 1000, t]);
      // RFC 3339 §5.6 lets T and Z be written t and z: the same window (it was a 400).
      const lower = await page(projectId, `from=${from.toLowerCase()}&to=${to.toLowerCase()}`);
      expect(lower.status, JSON.stringify(lower.body)).toBe(200);
      expect(lower.body.logs.map((l) => Date.parse(l.timestamp))).toEqual([t + 1000, t]);
    });

    it("filters by action, actor, outcome and any combination", async () => {
      const projectId = await f.addProject();
      const now = Date.now();
      const rows = [];
      let i = 0;
      for (const action of ["apps.deploy", "secrets.read"] as AuditAction[]) {
        for (const actorId of ["usr_a", "sa_b"]) {
          for (const outcome of ["success", "failure"] as const) {
            rows.push(entryAt(projectId, now - 1000 - i++, { action, actorId, outcome }));
          }
        }
      }
      await seed(f.db, rows);
      // A window over the middle of the rows: its bounds are the timestamps of rows 3 and 12.
      const window = {
        from: new Date(now - 1000 - 12).toISOString(),
        to: new Date(now - 1000 - 3).toISOString(),
      };
      const combos = [
        {},
        { action: "secrets.read" },
        { actor: "sa_b" },
        { outcome: "failure" },
        { action: "apps.deploy", actor: "usr_a" },
        { action: "secrets.read", outcome: "success" },
        { actor: "usr_a", outcome: "failure" },
        { action: "secrets.read", actor: "sa_b", outcome: "failure" },
        window,
        { ...window, action: "apps.deploy" },
        { ...window, actor: "sa_b", outcome: "success" },
        { ...window, action: "secrets.read", actor: "usr_a", outcome: "failure" },
      ] as Record<string, string>[];
      for (const combo of combos) {
        const query = new URLSearchParams(combo).toString();
        const { body } = await page(projectId, query);
        const expected = rows.filter(
          (r) =>
            (!combo.action || r.action === combo.action) &&
            (!combo.actor || r.actorId === combo.actor) &&
            (!combo.outcome || r.outcome === combo.outcome) &&
            (!combo.from || r.timestamp >= Date.parse(combo.from)) &&
            (!combo.to || r.timestamp <= Date.parse(combo.to)),
        );
        expect(expected.length, query).toBeGreaterThan(0);
        expect(
          body.logs.map((l) => l.id),
          query,
        ).toEqual(expected.map((r) => r.id));
      }
    });
  });

  describe("audit log: append-only in the database", () => {
    it("refuses UPDATE and the DELETE of a recent entry, allows the purge of old ones", async () => {
      const projectId = await f.addProject();
      const now = Date.now();
      const recent = entryAt(projectId, now - 1000);
      const ancient = entryAt(projectId, now - 400 * DAY);
      await seed(f.db, [recent, ancient]);
      await expect(
        f.db.update(auditLog).set({ outcome: "failure" }).where(eq(auditLog.id, recent.id)),
      ).rejects.toThrow();
      await expect(f.db.delete(auditLog).where(eq(auditLog.id, recent.id))).rejects.toThrow();
      await f.db.delete(auditLog).where(eq(auditLog.id, ancient.id));
      const left = await f.db
        .select({ n: sql<number>`count(*)` })
        .from(auditLog)
        .where(eq(auditLog.projectId, projectId));
      expect(left[0]?.n).toBe(1);
    });
  });
}
