import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ENV } from "../../common/consts.ts";
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
    // Not a day of the calendar: refused, saying what the flag takes.
    const bad = await cli(["audit-log", "--from", "2026-02-30"], first.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("--from takes an RFC 3339 time");
    // Nor is a month past 12: it was a RangeError's stack trace (the day check read an invalid date).
    const month = await cli(["audit-log", "--to", "2026-13-45"], first.env);
    expect(month.code).toBe(1);
    expect(month.stderr).toContain("--to takes an RFC 3339 time");
  });

  it("refuse what the API would not take before sending it, saying what the flag takes", async () => {
    // `--from 3w` went to the server, whose 400 named RFC 3339 alone ("from: must be an RFC 3339
    // date-time"), though the flag takes a date or a duration; and each try wrote a refused
    // audit_log.read into the log being read.
    const cases: [string[], string][] = [
      [
        ["--from", "3w"],
        "--from takes an RFC 3339 time (2026-11-22T09:30:00Z), a date (2026-11-22: --from its start, UTC) or a duration ago (90m, 24h, 7d) (got '3w')",
      ],
      [["--to", "yesterday"], "--to takes an RFC 3339 time"],
      [["--from", "2026-11-27T10:00"], "--from takes an RFC 3339 time"],
      [
        ["--outcome", "failed"],
        "--outcome takes success or failure, not 'failed' (did you mean 'failure'?)",
      ],
      [["--action", "secret.read"], "not 'secret.read' (did you mean 'secrets.read'?)"],
      [["--action", "everything"], "--action takes one of projects.create, projects.update,"],
      [
        ["--from", "2026-11-28", "--to", "2026-11-27"],
        "--from (2026-11-28T00:00:00.000Z) is later than --to (2026-11-27T23:59:59.999Z)",
      ],
    ];
    for (const [flags, said] of cases) {
      const refused = await cli(["audit-log", ...flags, "--json"], first.env);
      expect(refused.code, flags.join(" ")).toBe(1);
      expect(JSON.parse(refused.stdout).message).toContain(said);
      expect(JSON.parse(refused.stdout).status, "nothing was sent").toBeUndefined();
      const exported = await cli(["audit-log", "--export", "ndjson", ...flags], first.env);
      expect(exported.stderr).toContain(said);
    }
    const failures = await cli(["audit-log", "--outcome", "failure", "--json"], first.env);
    expect(JSON.parse(failures.stdout).logs).toEqual([]);
  });
});

describe("runlet audit-log --export answered 200 with something else than the export", () => {
  /** A proxy's sign-in page, as a proxy between the CLI and the control plane answers. */
  const PAGE =
    "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n<body>Proxy</body></html>\n";
  let server: ReturnType<typeof createServer>;
  let dir: string;
  let env: Record<string, string>;
  let url: string;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    env = { [ENV.baseUrl]: origin, [ENV.apiUrl]: origin, [ENV.project]: "prj_1", [ENV.token]: "t" };
    url = `${origin}/v2/projects/prj_1/audit-log/export?format=csv`;
    dir = await mkdtemp(join(tmpdir(), "runlet-audit-export-"));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  const said = `runlet audit-log: exporting the audit log failed: ${"URL"} answered 200 with text/html; charset=utf-8, not the export's text/csv: <!DOCTYPE html> <html><head><title>Sign in</title></head> <body>Proxy</body></html>. A proxy's page, or another server than Runlet's control plane: check RUNLET_BASE_URL (runlet start prints the control plane's address on its "control plane" line)`;

  it("exits 1 naming the URL and what came back, and writes no file (an older one stays as it was)", async () => {
    const fresh = join(dir, "fresh.csv");
    const exported = await cli(["audit-log", "--export", "csv", "--output", fresh], env);
    expect(exported.code).toBe(1);
    expect(exported.stderr).toBe(said.replace("URL", url));
    expect(existsSync(fresh)).toBe(false);
    const older = join(dir, "older.csv");
    await writeFile(older, "kept\n");
    const again = await cli(["audit-log", "--export", "csv", "--output", older], env);
    expect(again.code).toBe(1);
    expect(await readFile(older, "utf8")).toBe("kept\n");
  });

  it("writes none of the page to standard output either", async () => {
    const write = vi.spyOn(process.stdout, "write");
    try {
      const exported = await cli(["audit-log", "--export", "csv"], env);
      expect(exported.code).toBe(1);
      expect(exported.stderr).toBe(said.replace("URL", url));
      expect(write).not.toHaveBeenCalled();
    } finally {
      write.mockRestore();
    }
  });
});
