/**
 * Property: for random entries (many sharing a millisecond) and random filters, windows and page
 * sizes, walking every page yields exactly the filtered set, newest first (timestamp, then
 * the order written, latest first), each entry once, and the last page says so. Shared by the libSQL and D1 runs.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { AUDIT_ACTIONS, OUTCOMES } from "../audit/actions.ts";
import type { Database } from "../db/index.ts";
import { entryAt, newestFirst, seed } from "./audit-log.cases.ts";
import { createFixture } from "./fixture.ts";

const ACTORS = ["usr_a", "usr_b", "sa_c"] as const;
/** Entries are 60 s old plus 7 ms times one of these steps: few distinct milliseconds. */
const STEPS = 15;
const ageOf = (step: number) => 60_000 + step * 7;

const entries = fc.array(
  fc.record({
    step: fc.integer({ min: 0, max: STEPS }),
    // Mostly two actions, so that action filters often match several entries.
    action: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom("apps.deploy", "secrets.read" as const) },
      { weight: 1, arbitrary: fc.constantFrom(...AUDIT_ACTIONS) },
    ),
    actorId: fc.constantFrom(...ACTORS),
    outcome: fc.constantFrom(...OUTCOMES),
  }),
  // fast-check's default size keeps arrays under about ten entries, too few for ties to straddle
  // page boundaries often: draw lengths over the whole range.
  { maxLength: 60, size: "max" },
);

const filters = fc.record(
  {
    action: fc.constantFrom("apps.deploy", "secrets.read" as const),
    actor: fc.constantFrom(...ACTORS),
    outcome: fc.constantFrom(...OUTCOMES),
    // Window bounds as steps (older step = earlier), on an entry's millisecond or between two.
    from: fc.integer({ min: 0, max: 2 * STEPS + 1 }),
    to: fc.integer({ min: -1, max: 2 * STEPS }),
  },
  { requiredKeys: [] },
);

export function paginationProperty(open: () => Promise<Database>, numRuns: number) {
  it("walking all pages yields exactly the filtered set, newest first, each entry once", async () => {
    const f = await createFixture(await open());
    const now = Date.now();
    // A bound in half-steps: even ones fall on an entry's millisecond, odd ones between two.
    const at = (halfSteps: number) => now - 60_000 - halfSteps * 3.5;
    await fc.assert(
      fc.asyncProperty(
        entries,
        filters,
        fc.integer({ min: 1, max: 7 }),
        async (specs, filter, limit) => {
          const projectId = await f.addProject();
          const rows = specs.map((s) =>
            entryAt(projectId, now - ageOf(s.step), {
              action: s.action,
              actorId: s.actorId,
              outcome: s.outcome,
            }),
          );
          await seed(f.db, rows);

          // `from` is the older bound: at least as many half-steps back as `to`.
          const fromMs = filter.from === undefined ? undefined : Math.floor(at(filter.from));
          let toMs = filter.to === undefined ? undefined : Math.ceil(at(filter.to));
          if (fromMs !== undefined && toMs !== undefined && toMs < fromMs) toMs = fromMs;
          const query = new URLSearchParams({ limit: String(limit) });
          if (filter.action) query.set("action", filter.action);
          if (filter.actor) query.set("actor", filter.actor);
          if (filter.outcome) query.set("outcome", filter.outcome);
          if (fromMs !== undefined) query.set("from", new Date(fromMs).toISOString());
          if (toMs !== undefined) query.set("to", new Date(toMs).toISOString());

          const expected = newestFirst(rows)
            .filter(
              (r) =>
                (!filter.action || r.action === filter.action) &&
                (!filter.actor || r.actorId === filter.actor) &&
                (!filter.outcome || r.outcome === filter.outcome) &&
                (fromMs === undefined || r.timestamp >= fromMs) &&
                (toMs === undefined || r.timestamp <= toMs),
            )
            .map((r) => r.id);

          const seen: string[] = [];
          let next: string | undefined;
          let pages = 0;
          for (;;) {
            expect(++pages, "pages walked").toBeLessThanOrEqual(expected.length + 1);
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
            expect(body.logs).toHaveLength(limit);
            expect(body.nextPageToken).toEqual(expect.any(String));
            next = body.nextPageToken;
          }
          expect(seen).toEqual(expected);
          // hasMore is false as soon as nothing remains: no trailing empty page.
          expect(pages).toBe(Math.max(1, Math.ceil(expected.length / limit)));
        },
      ),
      { numRuns },
    );
    // Many runs of the property, each against the database: seconds on a busy machine.
  }, 60_000);
}
