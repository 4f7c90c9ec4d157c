import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseCsv } from "../testing/csv.ts";
import { CSV_COLUMNS, CSV_HEADER, csvEntry, csvField, csvRecord, ndjsonEntry } from "./export.ts";
import type { AuditRow } from "./list.ts";

const row = (over: Partial<AuditRow> = {}): AuditRow => ({
  seq: 1,
  id: "log_01",
  projectId: "prj_1",
  projectKey: 1,
  timestamp: Date.parse("2026-11-22T16:40:44.318Z"),
  action: "secrets.read",
  actorType: "service_account",
  actorId: "sa_1",
  actorKey: 2,
  actorName: "ci",
  outcome: "success",
  targetType: "secret",
  targetId: "DB_URL",
  requestId: "req_1",
  ip: null,
  userAgent: null,
  metadata: {},
  ...over,
});

describe("csvField", () => {
  it.each([
    ["plain", "plain"],
    ["", ""],
    ["a,b", '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ["two\nlines", '"two\nlines"'],
    ["carriage\rreturn", '"carriage\rreturn"'],
    ["=1+2", "'=1+2"],
    ["+1", "'+1"],
    ["-1", "'-1"],
    ["@SUM(A1:A2)", "'@SUM(A1:A2)"],
    ["\tindented", "'\tindented"],
    ["\rstart", '"\'\rstart"'],
    ['=HYPERLINK("http://x","y")', '"\'=HYPERLINK(""http://x"",""y"")"'],
    ["a=b", "a=b"],
    ["1-2", "1-2"],
  ])("%j → %j", (value, written) => {
    expect(csvField(value)).toBe(written);
  });

  it("writes null as an empty field", () => {
    expect(csvField(null)).toBe("");
  });
});

describe("csvRecord", () => {
  it("reads back as the same fields, formula starts aside, whatever the text", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "binary" }), { minLength: 1, maxLength: 6 }), (f) => {
        const [parsed] = parseCsv(csvRecord(f));
        const expected = f.map((v) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v));
        expect(parsed).toEqual(expected);
      }),
    );
  });

  it("never lets a field start with a formula character", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (value) => {
        const [[field]] = parseCsv(csvRecord([value])) as [[string]];
        expect(field).not.toMatch(/^[=+\-@\t\r]/);
      }),
    );
  });
});

describe("an entry", () => {
  it("is a CSV record in the order of the header", () => {
    expect(parseCsv(CSV_HEADER)).toEqual([[...CSV_COLUMNS]]);
    const entry = row({
      actorName: 'Bobby "Tables", Jr.\r\nsecond line',
      userAgent: "=cmd|' /C calc'!A0",
      ip: "203.0.113.7",
      metadata: { status: 403, error: "only the project owner may do this" },
    });
    const [fields] = parseCsv(csvEntry(entry));
    expect(fields).toEqual([
      "log_01",
      "2026-11-22T16:40:44.318Z",
      "secrets.read",
      "service_account",
      "sa_1",
      'Bobby "Tables", Jr.\r\nsecond line',
      "success",
      "secret",
      "DB_URL",
      "req_1",
      "203.0.113.7",
      "'=cmd|' /C calc'!A0",
      '{"status":403,"error":"only the project owner may do this"}',
    ]);
  });

  it("is one NDJSON line holding the list API's shape, line breaks escaped", () => {
    const line = ndjsonEntry(row({ actorName: "two\nlines\u2028" }));
    expect(line.endsWith("\n")).toBe(true);
    expect(line.slice(0, -1)).not.toMatch(/[\r\n]/);
    expect(JSON.parse(line)).toEqual({
      id: "log_01",
      timestamp: "2026-11-22T16:40:44.318Z",
      action: "secrets.read",
      actor: { type: "service_account", id: "sa_1", name: "two\nlines\u2028" },
      outcome: "success",
      target: { type: "secret", id: "DB_URL" },
      requestId: "req_1",
      ip: null,
      userAgent: null,
      metadata: {},
    });
  });
});
