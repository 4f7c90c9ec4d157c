import type { Command } from "../command.ts";
import { columns, fetchPages, loadConfig } from "../config.ts";

const USAGE = `Usage: runlet audit-log [--from T] [--to T] [--action A] [--actor ID]
                        [--outcome success|failure] [--limit N] [--all] [--json]

The project's audit log, newest first (project owners only).

  --from, --to   RFC 3339 times, e.g. 2026-11-01T00:00:00Z (from is clamped to the plan's window)
  --action       e.g. secrets.read, service_accounts.create, apps.deploy
  --actor        a user or service-account id
  --outcome      success or failure
  --limit        entries per page, 1 to 200 (default 50)
  --all          follow the pages to the end
  --json         the page as the API returns it; with --all, {logs, retentionDays}`;

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
  },
  async run({ values }) {
    const config = await loadConfig();
    const query = new URLSearchParams();
    for (const key of ["from", "to", "action", "actor", "outcome", "limit"] as const) {
      const value = values[key];
      if (typeof value === "string") query.set(key, value);
    }
    const all = values.all === true;
    const { items, last } = await fetchPages<Entry, "logs">(config, "/audit-log", "logs", query, {
      all,
      what: "reading the audit log",
    });
    if (values.json) {
      console.log(JSON.stringify(all ? { logs: items, retentionDays: last.retentionDays } : last));
      return 0;
    }
    if (items.length === 0) {
      console.log("No entries match.");
    } else {
      console.log(
        columns(
          ["TIME", "ACTION", "OUTCOME", "ACTOR", "TARGET"],
          items.map((e) => [
            e.timestamp,
            e.action,
            e.outcome,
            `${e.actor.name} (${e.actor.type === "user" ? "user" : "service account"} ${e.actor.id})`,
            `${e.target.type} ${e.target.id}`,
          ]),
        ),
      );
    }
    const more = !all && last.hasMore ? " More entries: --all, or narrow with --from/--to." : "";
    console.log(`\nThis plan keeps ${last.retentionDays} days of audit log.${more}`);
    return 0;
  },
};
