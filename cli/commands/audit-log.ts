import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import type { Writable } from "node:stream";
import { finished } from "node:stream/promises";
import { didYouMean } from "../../common/closest.ts";
import { EXPORT_CONTENT_TYPES, type ExportFormat } from "../../common/protocol/audit-export.ts";
import { upperCaseTime } from "../../common/rfc3339.ts";
import { AUDIT_ACTIONS, OUTCOMES } from "../../control-plane/audit/actions.ts";
import { CliError, type Command, durationMs, pageLimit, takesOnly } from "../command.ts";
import {
  baseUrlSource,
  type CliConfig,
  loadConfig,
  printTable,
  readAnswer,
  request,
} from "../config.ts";
import { isCalendarDate, isRfc3339Time } from "../expiry.ts";
import { fetchPages } from "../pages.ts";

const USAGE = `Usage: runlet audit-log [--from T] [--to T] [--action A] [--actor ID]
                        [--outcome success|failure] [--limit N] [--all] [--json]
       runlet audit-log --export csv|ndjson [--from T] [--to T] [--action A] [--actor ID]
                        [--outcome success|failure] [--output FILE]

The project's audit log, newest first (project owners only).

  --from, --to   RFC 3339 times, e.g. 2026-11-01T00:00:00Z, a date (2026-11-01: --from its
                 start, --to its end, UTC), or a duration ago: 90m, 24h, 7d (from is clamped
                 to the plan's window)
  --action       e.g. secrets.read, service_accounts.create, apps.deploy
  --actor        a user or service-account id
  --outcome      success or failure
  --limit        entries per page, 1 to 200 (default 50)
  --all          follow the pages to the end
  --json         the page as the API returns it; with --all, {logs, retentionDays}
  --export       every matching entry, streamed: csv (a header row; a field starting with
                 = + - @ or a tab gets a leading ' so spreadsheets show it as text) or ndjson
                 (one entry per line, as --json shows them). The export is itself audited.
  --output       write the export to FILE instead of standard output`;

const FILTERS = ["from", "to", "action", "actor", "outcome"] as const;

/** The filters that take a word of a closed list: checked here, as the API would refuse them. */
const CLOSED: ReadonlyArray<[string, readonly string[]]> = [
  ["outcome", OUTCOMES],
  ["action", AUDIT_ACTIONS],
];

/**
 * `--from 24h`: that long before now, as the API's RFC 3339 time; a time is sent as given (its
 * `t` and `z` in upper case, as a control plane before 2026-11-27 takes them). The API took times
 * alone, so "the last day" meant working out a timestamp by hand, though `tokens create
 * --expires` takes durations. A date is its day in UTC: `--from` its start, `--to` its end (the
 * API's `to` is inclusive); `--from 2026-11-27` was a 400, though `--expires` takes a date.
 */
function ago(text: string, edge: "from" | "to", now = Date.now()): string {
  const ms = durationMs(text);
  if (ms !== undefined) return new Date(now - ms).toISOString();
  if (isCalendarDate(text)) return `${text}T${edge === "from" ? "00:00:00.000" : "23:59:59.999"}Z`;
  if (isRfc3339Time(text)) return upperCaseTime(text);
  throw new CliError(
    `--${edge} takes an RFC 3339 time (2026-11-22T09:30:00Z), a date (2026-11-22: --${edge} its ${edge === "from" ? "start" : "end"}, UTC) or a duration ago (90m, 24h, 7d) (got '${text}')`,
  );
}

/**
 * The filters as the API takes them, or a CliError in one line before anything is sent. A value
 * it refuses went to the server, whose 400 named the API's own form alone (`from: must be an RFC
 * 3339 date-time`, for `--from 3w`, though the flag takes durations and dates), and each such
 * try wrote a refused `audit_log.read` into the very log being read.
 */
function filtersQuery(values: Record<string, unknown>): URLSearchParams {
  const query = new URLSearchParams();
  for (const key of FILTERS) {
    const value = values[key];
    if (typeof value === "string")
      query.set(key, key === "from" || key === "to" ? ago(value, key) : value);
  }
  for (const [key, choices] of CLOSED) {
    const value = query.get(key);
    if (value !== null && !choices.includes(value))
      throw new CliError(
        `--${key} takes ${choices.length === 2 ? choices.join(" or ") : `one of ${choices.join(", ")}`}, not '${value}'${didYouMean(value, choices)}`,
      );
  }
  const [from, to] = [query.get("from"), query.get("to")];
  if (from !== null && to !== null && Date.parse(from) > Date.parse(to))
    throw new CliError(`--from (${from}) is later than --to (${to}): nothing could match`);
  return query;
}

/**
 * Counts the records of an export as it streams: NDJSON lines, or CSV records (a line break
 * inside a quoted field is not the end of one; quotes come in pairs, doubled ones included).
 */
export function recordCounter(format: "csv" | "ndjson") {
  let quoted = false;
  let records = 0;
  return {
    feed(text: string) {
      for (const ch of text) {
        if (ch === '"' && format === "csv") quoted = !quoted;
        else if (ch === "\n" && !quoted) records++;
      }
    },
    /** Entries so far: the CSV header is not one. */
    get entries() {
      return format === "csv" ? Math.max(0, records - 1) : records;
    },
  };
}

/** The first characters of `res`'s body, on one line; the rest is not read. */
async function opening(res: Response, chars: number): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return "";
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (text.length < chars * 2) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return text.replace(/\s+/g, " ").trim().slice(0, chars);
}

/**
 * A 2xx that is not the export (a proxy's sign-in page, another server at the address) was
 * written out as it came, "wrote 0 entries", exit 0: an HTML page saved as the .csv. Its content
 * type says so; refused before any file is made, naming the address and what came back.
 */
async function refuseOtherAnswer(res: Response, format: ExportFormat, url: string, what: string) {
  const mediaType = (type: string) => type.split(";")[0]?.trim().toLowerCase() ?? "";
  const expected = mediaType(EXPORT_CONTENT_TYPES[format]);
  const got = res.headers.get("content-type") ?? "";
  if (mediaType(got) === expected) return;
  const body = (await opening(res, 200)) || "an empty body";
  throw new CliError(
    `${what} failed: ${url} answered ${res.status} with ${got || "no content type"}, not the export's ${expected}: ${body}. A proxy's page, or another server than Runlet's control plane: check ${baseUrlSource()} (runlet start prints the control plane's address on its "control plane" line)`,
  );
}

async function exportLog(
  config: CliConfig,
  format: string,
  query: URLSearchParams,
  output: string | undefined,
): Promise<number> {
  if (format !== "csv" && format !== "ndjson") {
    throw new CliError("--export must be csv or ndjson");
  }
  query.set("format", format);
  const what = "exporting the audit log";
  const url = `${config.baseUrl}/v2/projects/${config.projectId}/audit-log/export?${query}`;
  const res = await request(url, { headers: { authorization: `Bearer ${config.token}` } }, what);
  if (!res.ok || !res.body) await readAnswer(res, what); // throws the server's message
  await refuseOtherAnswer(res, format, url, what);
  // The file is created only once the export has begun, and removed if it is cut off.
  const file = output ? createWriteStream(output) : undefined;
  // A file that cannot be made (a missing folder) is said so, not as an export cut off.
  if (file)
    await once(file, "open").catch((err: Error) => {
      throw new CliError(`cannot write ${output}: ${err.message}`);
    });
  const out: Writable = file ?? process.stdout;
  // A write error (a missing folder, a closed pipe) may come between writes: kept for the loop.
  let writeError: Error | undefined;
  out.on("error", (err) => {
    writeError ??= err;
  });
  const counter = recordCounter(format);
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      if (writeError) throw writeError;
      counter.feed(decoder.decode(chunk, { stream: true }));
      if (!out.write(chunk)) await once(out, "drain");
    }
    if (file) await finished(file.end());
    if (writeError) throw writeError;
  } catch (err) {
    if (file && output) {
      file.destroy();
      await rm(output, { force: true });
    }
    const where = output ? ` (${output} removed)` : "";
    throw new CliError(
      `${what} stopped after ${counter.entries} entries${where}: ${(err as Error).message}`,
    );
  }
  process.stderr.write(`wrote ${counter.entries} entries to ${output ?? "standard output"}\n`);
  return 0;
}

interface Entry {
  timestamp: string;
  action: string;
  outcome: string;
  actor: { type: string; id: string; name: string };
  target: { type: string; id: string };
}

export const auditLog: Command = {
  name: "audit-log",
  summary: "read the project's audit log",
  usage: USAGE,
  options: {
    from: { type: "string" },
    to: { type: "string" },
    action: { type: "string" },
    actor: { type: "string" },
    outcome: { type: "string" },
    limit: { type: "string" },
    all: { type: "boolean" },
    export: { type: "string" },
    output: { type: "string", short: "o" },
  },
  async run({ values, positionals }) {
    // It takes no words: a stray one (a value without its option) was ignored.
    takesOnly("audit-log", { values: {}, words: positionals }, {}, USAGE);
    const query = filtersQuery(values);
    if (typeof values.export === "string") {
      const extra = (["limit", "all", "json"] as const).filter((k) => values[k] !== undefined);
      if (extra.length) {
        throw new CliError(
          `--export writes every matching entry: leave out ${extra.map((k) => `--${k}`).join(", ")}`,
        );
      }
      return exportLog(
        await loadConfig(),
        values.export,
        query,
        values.output as string | undefined,
      );
    }
    if (values.output !== undefined) throw new CliError("--output goes with --export");
    if (typeof values.limit === "string") query.set("limit", pageLimit(values.limit));
    const config = await loadConfig();
    const all = values.all === true;
    const { items, last } = await fetchPages<Entry, "logs">(config, "/audit-log", "logs", query, {
      all,
      what: "reading the audit log",
    });
    if (values.json) {
      console.log(JSON.stringify(all ? { logs: items, retentionDays: last.retentionDays } : last));
      return 0;
    }
    printTable(
      ["TIME", "ACTION", "OUTCOME", "ACTOR", "TARGET"],
      items.map((e) => [
        e.timestamp,
        e.action,
        e.outcome,
        `${e.actor.name} (${e.actor.type === "user" ? "user" : "service account"} ${e.actor.id})`,
        `${e.target.type} ${e.target.id}`,
      ]),
      "No entries match.",
    );
    const more = !all && last.hasMore ? " More entries: --all, or narrow with --from/--to." : "";
    console.error(`This plan keeps ${last.retentionDays} days of audit log.${more}`);
    return 0;
  },
};
