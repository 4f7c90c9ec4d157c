import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CSV_HEADER, csvRecord } from "../../control-plane/audit/export.ts";
import { recordCounter } from "./audit-log.ts";
import { runlet as cli, type FirstUser, withFirstUser } from "./test-support.ts";

/** `text` cut at the given offsets, as a download may arrive. */
const pieces = (text: string, cuts: number[]) => {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  return [0, ...at].map((from, i) => text.slice(from, at[i] ?? text.length));
};

describe("recordCounter", () => {
  it("counts CSV entries whatever the fields hold and however the stream is cut", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string({ unit: "binary" }), { minLength: 1, maxLength: 4 }), {
          maxLength: 20,
        }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (records, cuts) => {
          const counter = recordCounter("csv");
          const text = CSV_HEADER + records.map(csvRecord).join("");
          for (const piece of pieces(text, cuts)) counter.feed(piece);
          expect(counter.entries).toBe(records.length);
        },
      ),
    );
  });

  it("counts NDJSON lines", () => {
    const counter = recordCounter("ndjson");
    for (const piece of ['{"a":"x\\n', 'y"}\n{"b":', '"\\"q"}\n']) counter.feed(piece);
    expect(counter.entries).toBe(2);
  });
});

describe("runlet audit-log --from and --to", () => {
  let first: FirstUser;
  beforeAll(async () => {
    first = await withFirstUser("audit-log-ago", "first");
  }, 90_000);
  afterAll(() => first?.stop());

  it("take a duration ago (90m, 24h, 7d) as tokens create --expires takes one ahead", async () => {
    // The first user's project and user were made a moment ago.
    const lastHour = await cli(["audit-log", "--from", "1h", "--json"], first.env);
    expect(lastHour.code, lastHour.stderr).toBe(0);
    expect(JSON.parse(lastHour.stdout).logs.map((e: { action: string }) => e.action)).toEqual([
      "users.create",
      "projects.create",
    ]);
    // A time whose T and Z are written t and z (RFC 3339 §5.6): it was refused with 400.
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString().toLowerCase();
    const lower = await cli(["audit-log", "--from", hourAgo, "--json"], first.env);
    expect(lower.code, lower.stderr).toBe(0);
    expect(JSON.parse(lower.stdout).logs).toHaveLength(2);
    const before = await cli(["audit-log", "--to", "90m", "--json"], first.env);
    expect(JSON.parse(before.stdout).logs).toEqual([]);
    const exported = await cli(["audit-log", "--export", "ndjson", "--from", "7d"], first.env);
    expect(exported.code, exported.stderr).toBe(0);
    // Those two, and the export's own entry, written before it.
    expect(exported.progress).toContain("wrote 3 entries to standard output");
  });

  it("take a date as its day in UTC: --from its start, --to its end (it was a 400)", async () => {
    const all = await cli(["audit-log", "--json"], first.env);
    const made = (JSON.parse(all.stdout).logs as { action: string; timestamp: string }[]).find(
      (e) => e.action === "users.create",
    );
    const day = made?.timestamp.slice(0, 10) as string;
    const before = new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000).toISOString();
    const that = await cli(["audit-log", "--from", day, "--to", day, "--json"], first.env);
    expect(that.code, that.stderr).toBe(0);
    const actions = JSON.parse(that.stdout).logs.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(["users.create", "projects.create"]));
    const dayBefore = await cli(["audit-log", "--to", before.slice(0, 10), "--json"], first.env);
    expect(dayBefore.code, dayBefore.stderr).toBe(0);
    expect(JSON.parse(dayBefore.stdout).logs).toEqual([]);
    // Not a day of the calendar: sent as given, and the API's 400 says what it takes.
    const bad = await cli(["audit-log", "--from", "2026-02-30"], first.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("from: must be an RFC 3339 date-time");
    // Nor is a month past 12: it was a RangeError's stack trace (the day check read an invalid date).
    const month = await cli(["audit-log", "--to", "2026-13-45"], first.env);
    expect(month.code).toBe(1);
    expect(month.stderr).toContain("to: must be an RFC 3339 date-time");
  });
});
