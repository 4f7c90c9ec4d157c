/**
 * Property: for random entries (many sharing a millisecond) and random filters and page sizes,
 * walking every page yields exactly the filtered set, newest first, each entry once, and the
 * last page says so. Shared by the libSQL and D1 runs.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import type { Database } from "../db/index.ts";
import { entryAt, seed } from "./audit-log.cases.ts";
import { createFixture } from "./fixture.ts";

const ACTIONS = ["apps.deploy", "secrets.read", "secrets.write"] as const;
const ACTORS = ["usr_a", "usr_b", "sa_c"] as const;
const OUTCOMES = ["success", "failure"] as const;

const entries = fc.array(
  fc.record({
    // Within the last hour; few distinct milliseconds, so ties are common.
    ageMs: fc.integer({ min: 0, max: 40 }).map((n) => 60_000 + n * 7),
    action: fc.constantFrom(...ACTIONS),
    actorId: fc.constantFrom(...ACTORS),
    outcome: fc.constantFrom(...OUTCOMES),
  }),
  { maxLength: 60 },
);

const filters = fc.record(
  {
    action: fc.constantFrom(...ACTIONS),
    actor: fc.constantFrom(...ACTORS),
    outcome: fc.constantFrom(...OUTCOMES),
  },
  { requiredKeys: [] },
);

export function paginationProperty(open: () => Promise<Database>, numRuns: number) {
  it("walking all pages yields exactly the filtered set, newest first, each entry once", async () => {
    const f = await createFixture(await open());
    const now = Date.now();
    await fc.assert(
      fc.asyncProperty(
        entries,
        filters,
        fc.integer({ min: 1, max: 7 }),
        async (specs, filter, limit) => {
          const projectId = await f.addProject();
          const rows = specs.map((s) =>
            entryAt(projectId, now - s.ageMs, {
              id: newId("log", now - s.ageMs),
              action: s.action,
              actorId: s.actorId,
              outcome: s.outcome,
            }),
          );
          await seed(f.db, rows);
          const expected = rows
            .filter(
              (r) =>
                (!filter.action || r.action === filter.action) &&
                (!filter.actor || r.actorId === filter.actor) &&
                (!filter.outcome || r.outcome === filter.outcome),
            )
            .sort((a, b) => b.timestamp - a.timestamp || (a.id < b.id ? 1 : -1))
            .map((r) => r.id);

          const seen: string[] = [];
          let next: string | undefined;
          for (let pages = 0; pages <= expected.length + 1; pages++) {
            const query = new URLSearchParams({ ...filter, limit: String(limit) });
            if (next) query.set("nextToken", next);
            const res = await f.call("GET", `/v2/projects/${projectId}/audit-log?${query}`);
            expect(res.status).toBe(200);
            const body = (await res.json()) as {
              logs: { id: string }[];
              hasMore: boolean;
              nextPageToken?: string;
            };
            expect(body.logs.length).toBeLessThanOrEqual(limit);
            seen.push(...body.logs.map((l) => l.id));
            if (!body.hasMore) {
              expect(body).not.toHaveProperty("nextPageToken");
              break;
            }
            next = body.nextPageToken;
          }
          expect(seen).toEqual(expected);
        },
      ),
      { numRuns },
    );
  });
}
