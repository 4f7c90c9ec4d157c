/**
 * The audit-log export: every entry a query selects, newest first, as CSV or NDJSON, read page by
 * page with the list's keyset query so that no more than one page is ever held in memory. The
 * body is a `ReadableStream` that fetches the next page when its reader asks for more (Node and
 * Workers alike); a database error mid-way errors the stream, which aborts the response (its
 * chunked encoding never ends), so a cut-off export never looks complete.
 *
 * CSV follows RFC 4180 (CRLF line ends; a field with a comma, a quote, CR or LF is quoted, its
 * quotes doubled) and is safe to open in a spreadsheet: a field that starts with `=`, `+`, `-`,
 * `@`, a tab or CR gets a leading `'`, so it is shown as text and never run as a formula (OWASP
 * "CSV injection"). NDJSON is the list API's entry shape, one per line, unaltered.
 */
import type { ExportFormat } from "../../common/protocol/audit-export.ts";
import type { Database } from "../db/index.ts";
import type { PagePosition } from "../page-token.ts";
import { type AuditQuery, type AuditRow, auditEntryView, listAuditEntries } from "./list.ts";

/** Rows per query: large enough to be few round trips, small enough to hold at once. */
export const EXPORT_PAGE_SIZE = 500;

export const CSV_COLUMNS = [
  "id",
  "timestamp",
  "action",
  "actor_type",
  "actor_id",
  "actor_name",
  "outcome",
  "target_type",
  "target_id",
  "request_id",
  "ip",
  "user_agent",
  "metadata",
] as const;

/** Characters a spreadsheet may take as the start of a formula. */
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV field: formula starts neutralised with `'`, then quoted if RFC 4180 requires it. */
export function csvField(value: string | null): string {
  if (value === null) return "";
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One CSV record, with its CRLF. */
export function csvRecord(fields: readonly (string | null)[]): string {
  return `${fields.map(csvField).join(",")}\r\n`;
}

export const CSV_HEADER = csvRecord(CSV_COLUMNS);

/** An entry as a CSV record, in the order of `CSV_COLUMNS`. */
export function csvEntry(row: AuditRow): string {
  const e = auditEntryView(row);
  return csvRecord([
    e.id,
    e.timestamp,
    e.action,
    e.actor.type,
    e.actor.id,
    e.actor.name,
    e.outcome,
    e.target.type,
    e.target.id,
    e.requestId,
    e.ip,
    e.userAgent,
    JSON.stringify(e.metadata),
  ]);
}

/** An entry as one NDJSON line (JSON escapes every line break inside strings). */
export function ndjsonEntry(row: AuditRow): string {
  return `${JSON.stringify(auditEntryView(row))}\n`;
}

/** What an export selects: the list's query without its page position and size. */
export type ExportQuery = Omit<AuditQuery, "limit" | "after">;

/**
 * The export as a byte stream. `empty` (a window wholly before retention) gives the CSV header
 * alone, or nothing for NDJSON, without a query.
 */
export function exportStream(
  db: Database,
  query: ExportQuery,
  format: ExportFormat,
  opts: { empty?: boolean; pageSize?: number } = {},
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const serialize = format === "csv" ? csvEntry : ndjsonEntry;
  const limit = opts.pageSize ?? EXPORT_PAGE_SIZE;
  let after: PagePosition | undefined;
  let started = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!started) {
          started = true;
          if (format === "csv") controller.enqueue(encoder.encode(CSV_HEADER));
          if (opts.empty) return controller.close();
          if (format === "csv") return;
        }
        let page: Awaited<ReturnType<typeof listAuditEntries>>;
        try {
          page = await listAuditEntries(db, { ...query, limit, after });
        } catch (err) {
          console.error("[control-plane] audit-log export failed mid-stream:", err);
          return controller.error(err);
        }
        const last = page.rows.at(-1);
        if (last) controller.enqueue(encoder.encode(page.rows.map(serialize).join("")));
        if (!page.hasMore || !last) return controller.close();
        after = { timestamp: last.timestamp, id: last.seq };
      },
    },
    // Nothing is read ahead of the reader: one page in memory at a time.
    { highWaterMark: 0 },
  );
}
