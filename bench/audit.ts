/**
 * `npm run bench:audit`: the audit log at scale. Seeds a temporary libSQL file with one project's
 * entries (plus other projects' noise), then times the page queries — the keyset query itself and
 * the whole HTTP route in-process (token check, validation, page-token signing) — and the bulk
 * insert. Prints a table of medians and p99, and last a one-line machine-readable summary.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { InValue } from "@libsql/client";
import { getTableColumns, sql } from "drizzle-orm";
import { newId } from "../common/ids.ts";
import { AUDIT_ACTIONS, type AuditAction } from "../control-plane/audit/actions.ts";
import { type AuditQuery, auditPageQuery, listAuditEntries } from "../control-plane/audit/list.ts";
import { auditRow } from "../control-plane/audit/record.ts";
import { openLibsql } from "../control-plane/db/index.ts";
import { auditLog } from "../control-plane/db/schema.ts";
import { issuePageToken } from "../control-plane/page-token.ts";
import { createFixture } from "../control-plane/testing/fixture.ts";
import { describeMachine, machineInfo, measure, ms, type Summary, table } from "./stats.ts";

const HELP = `Usage: npm run bench:audit -- [options]

Seeds a temporary libSQL database with audit entries and times the audit-log pages.

Options:
  --entries N   entries of the measured project (default 1000000); other projects get 25% more as noise
  --samples N   timed runs per query, after 20 warm-up runs (default 200)
  --explain     print SQLite's query plan of each measured query
  --inserts-only
                seed with the three filter indexes dropped (only the time index left) and report
                the insert rate alone: what those indexes cost on writes
  --keep        keep the seeded database and print its path (to explore it afterwards)
  --json        print the results as JSON instead of a table
  --help        show this help
`;

const DAY = 86_400_000;
const ACTORS = 300;
const NOISE_PROJECTS = 4;
/** Rows per INSERT statement, and statements per transaction. */
const CHUNK = 500;
const CHUNKS_PER_TRANSACTION = 100;

const { values: args } = parseArgs({
  options: {
    entries: { type: "string", default: "1000000" },
    samples: { type: "string", default: "200" },
    explain: { type: "boolean", default: false },
    "inserts-only": { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  process.stdout.write(HELP);
  process.exit(0);
}
const entries = Number(args.entries);
const samples = Number(args.samples);
if (!Number.isInteger(entries) || entries < 10_000 || !Number.isInteger(samples) || samples < 10) {
  console.error("bench:audit: --entries must be an integer ≥ 10000 and --samples ≥ 10");
  process.exit(2);
}

const progress = (line: string) => process.stderr.write(`${line}\n`);

/** A deterministic pseudo-random stream, so every run seeds the same shape of data. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const dir = await mkdtemp(join(tmpdir(), "runlet-bench-audit-"));
try {
  const { db, client, close } = await openLibsql(`file:${join(dir, "bench.db")}`);
  const fixture = await createFixture(db, { plan: "enterprise" });
  const projectId = fixture.projectId;
  const noise: string[] = [];
  for (let i = 0; i < NOISE_PROJECTS; i++) noise.push(await fixture.addProject("enterprise"));

  const FILTER_INDEXES = ["action", "actor", "action_actor"];
  if (args["inserts-only"]) {
    for (const name of FILTER_INDEXES) await db.run(sql.raw(`DROP INDEX audit_${name}`));
  }

  // ---- seed: 30 days of entries, newest now; the measured project and the noise interleaved ----
  const now = Date.now();
  // Entries are written oldest first, as they happen; whole chunks only.
  const total = Math.ceil((entries * 1.25) / CHUNK) * CHUNK;
  const rand = random(42);
  const actorIds = Array.from({ length: ACTORS }, (_, i) => `usr_${String(i).padStart(26, "0")}`);
  // One multi-row INSERT prepared from the schema's own columns; each chunk only binds values,
  // converted by each column's own driver mapping (action and outcome codes, JSON metadata).
  const columns = Object.entries(getTableColumns(auditLog)).filter(([key]) => key !== "seq");
  const insert = `INSERT INTO audit_log (${columns.map(([, col]) => `"${col.name}"`).join(", ")}) VALUES ${Array(
    CHUNK,
  )
    .fill(`(${columns.map(() => "?").join(", ")})`)
    .join(", ")}`;
  const bind = (row: typeof auditLog.$inferInsert) =>
    columns.map(([key, col]) => {
      const value = row[key as keyof typeof row];
      return value == null ? null : (col.mapToDriverValue(value) as InValue);
    });
  // Timed: the database's work only (statements and commits). Making up the synthetic rows —
  // random ids above all — happens before each transaction and is not counted.
  let inserted = 0;
  let databaseMs = 0;
  while (inserted < total) {
    const n = Math.min(CHUNK * CHUNKS_PER_TRANSACTION, total - inserted);
    const statements: InValue[][] = [];
    for (let done = 0; done < n; done += CHUNK) {
      const args: InValue[] = [];
      for (let k = 0; k < CHUNK; k++) {
        const i = inserted + done + k;
        const timestamp = now - Math.floor(((total - 1 - i) / total) * 30 * DAY);
        const project = i % 5 === 4 ? (noise[i % NOISE_PROJECTS] as string) : projectId;
        const actor = actorIds[Math.floor(rand() * ACTORS)] as string;
        const action = AUDIT_ACTIONS[Math.floor(rand() * AUDIT_ACTIONS.length)] as AuditAction;
        args.push(
          ...bind(
            auditRow({
              id: newId("log", timestamp),
              projectId: project,
              timestamp,
              action,
              actorType: "user",
              actorId: actor,
              actorName: `User ${actor.slice(-3)}`,
              outcome: rand() < 0.1 ? "failure" : "success",
              targetType: "app",
              targetId: `app-${Math.floor(rand() * 50)}`,
              requestId: newId("req", timestamp),
              ip: `203.0.113.${Math.floor(rand() * 250)}`,
              userAgent: "runlet-cli/0.1.0 node/20",
              metadata: { version: Math.floor(rand() * 100), runtime: "managed", bytes: 1234 },
            }),
          ),
        );
      }
      statements.push(args);
    }
    const started = performance.now();
    const tx = await client.transaction("write");
    for (const args of statements) await tx.execute({ sql: insert, args });
    await tx.commit();
    databaseMs += performance.now() - started;
    inserted += n;
    if (inserted % 100_000 < n || inserted === total) {
      const rate = inserted / (databaseMs / 1000);
      progress(
        `seeded ${inserted.toLocaleString("en")} / ${total.toLocaleString("en")} (${Math.round(rate).toLocaleString("en")}/s)`,
      );
    }
  }
  const insertsPerSecond = total / (databaseMs / 1000);
  if (args["inserts-only"]) {
    console.log(
      `bulk insert without the filter indexes: ${Math.round(insertsPerSecond)} entries/s`,
    );
    close();
    await rm(dir, { recursive: true, force: true });
    process.exit(0);
  }
  // Measure reads on a settled database: the WAL folded into the file, statistics fresh, and the
  // operating system done writing the seeded pages back to disk (else reads compete with that).
  await client.execute("PRAGMA wal_checkpoint(TRUNCATE)");
  await db.run(sql`ANALYZE`);
  execFileSync("sync");
  const [projectRows] = await db
    .select({ n: sql<number>`count(*)` })
    .from(auditLog)
    .where(sql`${auditLog.projectId} = ${projectId}`);
  progress(`project ${projectId}: ${projectRows?.n.toLocaleString("en")} entries; measuring…`);

  // ---- the queries ----
  const base: AuditQuery = { projectId, fromMs: now - 365 * DAY, toMs: now + 1, limit: 50 };
  const [deep] = await db
    .select({ timestamp: auditLog.timestamp, id: auditLog.seq })
    .from(auditLog)
    .where(sql`${auditLog.projectId} = ${projectId}`)
    .orderBy(sql`${auditLog.timestamp} DESC, ${auditLog.seq} DESC`)
    .limit(1)
    .offset(9_999); // setup only: finds the keyset position of entry 10,000
  if (!deep) throw new Error("not enough entries for a page 10,000 deep");
  const actor = actorIds[7] as string;
  const dayStart = new Date(now - 15 * DAY).toISOString();
  const dayEnd = new Date(now - 14 * DAY).toISOString();

  const cases: {
    name: string;
    query: AuditQuery;
    http: Record<string, string>;
    after?: typeof deep;
  }[] = [
    { name: "first page", query: base, http: {} },
    { name: "page 10,000 deep", query: { ...base, after: deep }, http: {}, after: deep },
    {
      name: "action=secrets.read",
      query: { ...base, action: "secrets.read" },
      http: { action: "secrets.read" },
    },
    { name: "actor", query: { ...base, actor }, http: { actor } },
    {
      name: "outcome=failure",
      query: { ...base, outcome: "failure" },
      http: { outcome: "failure" },
    },
    {
      name: "action+outcome",
      query: { ...base, action: "apps.deploy", outcome: "failure" },
      http: { action: "apps.deploy", outcome: "failure" },
    },
    {
      name: "action+actor+outcome",
      query: { ...base, action: "apps.deploy", actor, outcome: "success" },
      http: { action: "apps.deploy", actor, outcome: "success" },
    },
    {
      name: "one-day window",
      query: { ...base, fromMs: Date.parse(dayStart), toMs: Date.parse(dayEnd) },
      http: { from: dayStart, to: dayEnd },
    },
  ];

  const results: { name: string; query: Summary; http: Summary; rows: number }[] = [];
  for (const c of cases) {
    const { rows } = await listAuditEntries(db, c.query);
    const query = await measure(() => listAuditEntries(db, c.query), { samples });
    const params = new URLSearchParams(c.http);
    if (c.after) {
      const filters = {
        list: "audit-log",
        projectId,
        from: undefined,
        to: undefined,
        action: undefined,
        actor: undefined,
        outcome: undefined,
      };
      params.set(
        "nextToken",
        await issuePageToken(fixture.deps.derived.pageTokens, c.after, filters),
      );
    }
    const path = `/v2/projects/${projectId}/audit-log?${params}`;
    const check = await fixture.call("GET", path);
    if (check.status !== 200)
      throw new Error(`${c.name}: HTTP ${check.status} ${await check.text()}`);
    const http = await measure(async () => (await fixture.call("GET", path)).arrayBuffer(), {
      samples,
    });
    results.push({ name: c.name, query, http, rows: rows.length });
    progress(`  ${c.name}: query p50 ${ms(query.p50)} ms, HTTP p50 ${ms(http.p50)} ms`);
  }

  if (args.explain) {
    for (const c of cases) {
      const { sql: text, params } = auditPageQuery(db, c.query).toSQL();
      const plan = await client.execute({
        sql: `EXPLAIN QUERY PLAN ${text}`,
        args: params as InValue[],
      });
      progress(`plan of ${c.name}: ${plan.rows.map((p) => p.detail).join("; ")}`);
    }
  }

  const dbBytes = (await stat(join(dir, "bench.db"))).size;
  close();

  const first = results[0] as (typeof results)[number];
  const deepResult = results[1] as (typeof results)[number];
  const filters = results.slice(2);
  const worstFilter = Math.max(...filters.map((r) => r.http.p50));
  const machine = machineInfo();

  if (args.json) {
    console.log(
      JSON.stringify(
        { entries: projectRows?.n, total, insertsPerSecond, dbBytes, machine, results },
        null,
        2,
      ),
    );
  } else {
    console.log(
      `\nAudit log, ${Number(projectRows?.n).toLocaleString("en")} entries in the measured project ` +
        `(${total.toLocaleString("en")} in all), ${samples} samples each, limit 50\n`,
    );
    console.log(
      table(
        ["query", "rows", "query p50 ms", "query p99 ms", "HTTP p50 ms", "HTTP p99 ms"],
        results.map((r) => [
          r.name,
          r.rows,
          ms(r.query.p50),
          ms(r.query.p99),
          ms(r.http.p50),
          ms(r.http.p99),
        ]),
      ),
    );
    console.log(
      `\nbulk insert: ${Math.round(insertsPerSecond).toLocaleString("en")} entries/s ` +
        `(statements of ${CHUNK} rows, ${CHUNK * CHUNKS_PER_TRANSACTION} per transaction); database file ${(dbBytes / 2 ** 20).toFixed(0)} MiB`,
    );
    console.log(
      `deep/first page ratio (HTTP p50): ${(deepResult.http.p50 / first.http.p50).toFixed(2)}; ` +
        `machine: ${describeMachine(machine)}`,
    );
  }
  console.log(
    `bench:audit first_p50_ms=${ms(first.http.p50)} deep_p50_ms=${ms(deepResult.http.p50)} ` +
      `worst_filter_p50_ms=${ms(worstFilter)} inserts_per_s=${Math.round(insertsPerSecond)}`,
  );
} finally {
  if (args.keep) progress(`kept the database: ${join(dir, "bench.db")}`);
  else await rm(dir, { recursive: true, force: true });
}
