/**
 * The audit log page's filters (`action`, `actor`, `outcome`, `from`, `to`), read from its
 * address. A value the API would refuse is checked here with the API's own schema and left out
 * by name, with what the filter takes and the value likely meant: passed on, the API's 400 named
 * its first problem only and the list and every other filter in the form were lost with it.
 */
import { didYouMean } from "../../common/closest.ts";
import { AUDIT_ACTIONS, OUTCOMES } from "../audit/actions.ts";
import { auditLogQuery } from "../routes/audit-log-list.ts";

const FILTERS = ["action", "actor", "outcome", "from", "to"] as const;
type Filter = (typeof FILTERS)[number];

const TIME =
  "a time: UTC as the field gives it, like 2026-11-22T09:30, or RFC 3339, like 2026-11-22T09:30:00Z";

/** What each filter takes, as said beside a value it does not. */
const TAKES: Record<Filter, string> = {
  action: `one of ${AUDIT_ACTIONS.join(", ")}`,
  actor: "an actor id (usr_… or sa_…) of up to 128 characters",
  outcome: `${OUTCOMES.join(" or ")}`,
  from: TIME,
  to: TIME,
};

/** The closed lists a mistyped value is matched against (common/closest.ts). */
const CHOICES: Partial<Record<Filter, readonly string[]>> = {
  action: AUDIT_ACTIONS,
  outcome: OUTCOMES,
};

/** A `datetime-local` value: to the minute, or with seconds and their fraction. */
const LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/;

/**
 * A `datetime-local` value (read as UTC) or an RFC 3339 time, as the API takes it. A `to`
 * field without a fraction of a second takes in that whole second, as the page's rows show
 * times to the second: an entry at 05:16:06.412, shown as `05:16:06 UTC`, was left out by
 * To `05:16:06` (the API's 05:16:06.000). An RFC 3339 time is the API's, to the millisecond.
 */
export function apiTime(name: "from" | "to", value: string): string {
  if (!LOCAL.test(value)) return value;
  const seconds = value.length === 16 ? `${value}:00` : value;
  return name === "to" && seconds.length === 19 ? `${seconds}.999Z` : `${seconds}Z`;
}

/**
 * The time as the form's `datetime-local` field shows it (UTC): a permalink's RFC 3339 time
 * left the field empty, and the next Filter sent `from=` and lost the window.
 */
export function fieldValue(value: string | undefined): string | undefined {
  if (!value || LOCAL.test(value)) return value;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return value; // filtersOf leaves such a value out: not reached
  const iso = new Date(at).toISOString();
  return iso.endsWith(":00.000Z") ? iso.slice(0, 16) : iso.slice(0, 23).replace(/\.000$/, "");
}

const takes = (name: Filter, value: string) => auditLogQuery.shape[name].safeParse(value).success;

/**
 * The time a refused one likely meant, as the field shows it (UTC): with a space for the `T`
 * (`2026-11-22 09:30`, as people write it), or an offset whose '+' the query string read as a
 * space (`…09:30:00 01:00`; said in UTC, which needs no '+' in an address).
 */
function meantTime(name: "from" | "to", value: string): string | undefined {
  const time = value
    .replace(/^(\d{4}-\d{2}-\d{2}) +(?=\d)/, "$1T")
    .replace(/ (\d{2}:\d{2})$/, "+$1");
  return time !== value && takes(name, apiTime(name, time)) ? fieldValue(time) : undefined;
}

/**
 * The page's filters the API takes, the API query they make, and a sentence for each value it
 * would not take (those are left out of both), with how many filters that leaves out.
 */
export function filtersOf(query: Record<string, string>) {
  const page: Partial<Record<Filter, string>> = {};
  const api = new URLSearchParams();
  const problems: string[] = [];
  for (const name of FILTERS) {
    const value = query[name]?.trim();
    if (!value) continue;
    const sent = name === "from" || name === "to" ? apiTime(name, value) : value;
    if (!takes(name, sent)) {
      const time = name === "from" || name === "to" ? meantTime(name, value) : undefined;
      const meant = time ? ` (did you mean '${time}'?)` : didYouMean(value, CHOICES[name] ?? []);
      problems.push(`${name} '${value}' is not ${TAKES[name]}${meant}`);
      continue;
    }
    page[name] = value;
    api.set(name, sent);
  }
  let leftOut = problems.length;
  // A window that ends before it starts, said and left out as the others are: the API's 400 was
  // the page's only word (no list), and each such slip wrote a refused read into the audit log.
  const [from, to] = [api.get("from"), api.get("to")];
  if (from && to && Date.parse(from) > Date.parse(to)) {
    problems.push(`from '${page.from}' is later than to '${page.to}'`);
    for (const name of ["from", "to"] as const) {
      delete page[name];
      api.delete(name);
    }
    leftOut += 2;
  }
  return { page, api, problems, leftOut };
}

/** The page's filters with `actor` set to `id` (the same window, action and outcome). */
export function byActor(page: Partial<Record<Filter, string>>, id: string): URLSearchParams {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...page, actor: id }))
    if (value) query.set(name, value);
  return query;
}
