/**
 * The runs index taking a batch of reports (`POST /internal/runs`, several rows per statement):
 * the same rules as one report at a time, on libSQL and on D1 (which binds at most 100
 * parameters to a statement).
 */
import { eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import type { Database } from "../db/index.ts";
import { runs } from "../db/schema.ts";
import { createHostToken } from "../hosts/tokens.ts";
import { recordRuns } from "../runs/index.ts";
import { LOST, RESTARTED, SYNC_LOST_MS } from "../runs/lost-sync.ts";
import { createFixture, type Fixture, INTERNAL_TOKEN, registerHost } from "./fixture.ts";

type Report = Record<string, unknown> & { id: string };

export function runsBatchCases(open: () => Promise<Database>) {
  let f: Fixture;
  beforeAll(async () => {
    f = await createFixture(await open());
  });

  const report = (id: string, status: string, more: Record<string, unknown> = {}): Report => ({
    id,
    projectId: f.projectId,
    app: "batch",
    function: "run",
    async: true,
    status,
    createdAt: Date.now(),
    finishedAt: status === "queued" || status === "running" ? null : Date.now(),
    runTimeMs: status === "success" ? 2.5 : null,
    ...more,
  });
  const post = async (runs: Report[]) => {
    const res = await f.call("POST", "/internal/runs", { token: INTERNAL_TOKEN, body: { runs } });
    expect(res.status).toBe(200);
    return res.json();
  };
  const viewOf = async (id: string) =>
    (await f.call("GET", `/v2/projects/${f.projectId}/runs/${id}`)).json() as Promise<
      Record<string, unknown>
    >;

  describe("the runs index takes a batch of reports", () => {
    it("records 50 runs in one write, then their ends", async () => {
      const ids = Array.from({ length: 50 }, () => newId("run"));
      expect(await post(ids.map((id) => report(id, "queued", { host: "hst_a" })))).toEqual({
        recorded: 50,
        skipped: 0,
      });
      await post(ids.map((id) => report(id, "success")));
      for (const id of [ids[0], ids[24], ids[49]] as string[])
        expect(await viewOf(id)).toMatchObject({
          status: "success",
          runTimeMs: 2.5,
          host: "hst_a",
        });
    });

    it("never moves a run out of an end, nor back from running to queued; a later report in the batch wins", async () => {
      const [ended, started, twice] = [newId("run"), newId("run"), newId("run")];
      await post([report(ended, "failure"), report(started, "running")]);
      await post([
        report(ended, "running"),
        report(started, "queued"),
        report(twice, "queued"),
        report(twice, "running"),
      ]);
      expect(await viewOf(ended)).toMatchObject({ status: "failure" });
      expect(await viewOf(started)).toMatchObject({ status: "running" });
      expect(await viewOf(twice)).toMatchObject({ status: "running" });
    });

    it("takes an ended run's run time when it comes after its end (a cancel its host answered late), and only then", async () => {
      const id = newId("run");
      await post([report(id, "cancelled", { host: "hst_a" })]);
      expect(await viewOf(id)).toMatchObject({ status: "cancelled", runTimeMs: null });
      await post([report(id, "cancelled", { runTimeMs: 812, host: "hst_b" })]);
      expect(await viewOf(id)).toMatchObject({ status: "cancelled", runTimeMs: 812 });
      // Once it has one, and for another end: the first word stays.
      await post([report(id, "cancelled", { runTimeMs: 5 })]);
      await post([report(id, "success")]);
      expect(await viewOf(id)).toMatchObject({ status: "cancelled", runTimeMs: 812 });
      // A failure's second report (the host's after the Worker's: a caller's upload broke off)
      // keeps the first's error, run time or not.
      const failed = newId("run");
      await post([report(failed, "failure", { error: "the caller's upload broke off" })]);
      await post([report(failed, "failure", { error: "the caller went away", runTimeMs: 9 })]);
      expect(await viewOf(failed)).toMatchObject({
        error: { message: "the caller's upload broke off" },
        runTimeMs: null,
      });
    });

    it("writes a webhook's end after the run's, and a late pending never replaces it", async () => {
      const id = newId("run");
      await post([report(id, "success")]);
      await post([report(id, "success", { webhook: { state: "delivered", attempts: 2 } })]);
      await post([report(id, "success", { webhook: { state: "pending", attempts: 0 } })]);
      expect(await viewOf(id)).toMatchObject({ webhook: { state: "delivered", attempts: 2 } });
    });

    it("stores a lone half of a UTF-16 pair in a report's text as U+FFFD, the rest as it came", async () => {
      const id = newId("run");
      await post([
        report(id, "failure", { function: "r\ud800un", error: "bad \udc00 half; 😀 whole\n" }),
      ]);
      expect(await viewOf(id)).toMatchObject({
        function: "r\ufffdun",
        error: { message: "bad \ufffd half; 😀 whole\n" },
      });
      // Stored as UTF-8 (not the bytes of a lone half, which a reader of the file would choke on).
      const [stored] = await f.db
        .select({ error: sql<string>`hex(${runs.error})` })
        .from(runs)
        .where(eq(runs.id, id));
      const utf8 = Buffer.from("bad \ufffd half; 😀 whole\n").toString("hex").toUpperCase();
      expect(stored?.error).toBe(utf8);
    });

    it("binds at most 100 parameters to a statement (D1's limit, which its local form does not hold)", async () => {
      const db = await open();
      const worst = Array.from({ length: 250 }, () =>
        report(newId("run"), "success", {
          host: "hst_a",
          webhook: { state: "failed", attempts: 3 },
        }),
      ) as unknown as Parameters<typeof recordRuns>[1];
      const statements = recordRuns(db, worst);
      for (const statement of statements)
        expect(
          (statement as unknown as { toSQL(): { params: unknown[] } }).toSQL().params.length,
        ).toBeLessThanOrEqual(100);
    });

    it("forgets a run 7 days after its end, and one whose end never came once no run could still be going", async () => {
      const day = 86_400_000;
      const now = Date.now();
      const run = (createdDaysAgo: number, endedDaysAgo: number | null, status: string) => {
        const createdAt = now - createdDaysAgo * day;
        const finishedAt = endedDaysAgo === null ? null : now - endedDaysAgo * day;
        return report(newId("run", createdAt), status, { createdAt, finishedAt });
      };
      const endedLongAgo = run(9, 8, "success");
      const endedLately = run(9, 6, "failure"); // queued for days first
      const neverEnded = run(15, null, "running"); // past 7 days queued, 12 h running, 7 days kept
      const mayStillGo = run(10, null, "queued");
      const fresh = run(0, 0, "success");
      await post([endedLongAgo, endedLately, neverEnded, mayStillGo, fresh]);
      const statusOf = async (r: Report) =>
        (await f.call("GET", `/v2/projects/${f.projectId}/runs/${r.id}`)).status;
      expect(await statusOf(endedLongAgo)).toBe(404);
      expect(await statusOf(neverEnded)).toBe(404);
      expect(await statusOf(endedLately)).toBe(200);
      expect(await statusOf(mayStillGo)).toBe(200);
      expect(await statusOf(fresh)).toBe(200);
    });

    it("ends the sync runs a host listed running once it registers again (it restarted), not another host's", async () => {
      const { token } = await createHostToken(f.db, { name: "restarts", createdBy: f.owner.id });
      const address = `http://10.7.${Math.floor(Math.random() * 250)}.1:8790`;
      const hostId = await registerHost(f, token, address);
      const sync = { async: false, host: hostId };
      const [mine, ended, other, queued] = [newId("run"), newId("run"), newId("run"), newId("run")];
      await post([
        report(mine, "running", sync),
        report(ended, "success", sync),
        report(other, "running", { ...sync, host: "hst_other" }),
        report(queued, "running", { host: hostId }), // an async run: its shard says how it ends
      ]);
      expect(await registerHost(f, token, address)).toBe(hostId);
      expect(await viewOf(mine)).toMatchObject({
        status: "failure",
        error: { message: RESTARTED },
        finishedAt: expect.any(String),
      });
      expect(await viewOf(ended)).toMatchObject({ status: "success" });
      expect(await viewOf(other)).toMatchObject({ status: "running" });
      expect(await viewOf(queued)).toMatchObject({ status: "running" });
    });

    it("lists a sync run running past the Worker's longest wait for its answer as failed: its end is lost", async () => {
      const createdAt = Date.now() - SYNC_LOST_MS - 1_000;
      const old = newId("run", createdAt);
      const lately = newId("run", Date.now() - SYNC_LOST_MS + 60_000);
      await post([
        report(old, "running", { async: false, createdAt, app: "lost" }),
        report(lately, "running", { async: false, app: "lost" }),
      ]);
      const listed = (await (
        await f.call("GET", `/v2/projects/${f.projectId}/runs?app=lost`)
      ).json()) as { runs: Record<string, unknown>[] };
      const byId = new Map(listed.runs.map((r) => [r.id, r]));
      expect(byId.get(old)).toMatchObject({ status: "failure", error: { message: LOST } });
      expect(byId.get(lately)).toMatchObject({ status: "running" });
      // Written, not only shown.
      const [row] = await f.db.select().from(runs).where(eq(runs.id, old));
      expect(row?.status).toBe("failure");
      expect(await viewOf(old)).toMatchObject({ status: "failure", error: { message: LOST } });
    });

    it("skips the reports of a project that does not exist", async () => {
      const runs = [
        report(newId("run"), "queued"),
        report(newId("run"), "queued", { projectId: "prj_gone" }),
      ];
      expect(await post(runs)).toEqual({ recorded: 1, skipped: 1 });
    });
  });
}
