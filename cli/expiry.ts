/**
 * A token's expiry as the CLI's --expires takes it (`tokens create`, `users create`, `users
 * token`, `init`), checked as the control plane checks `expiresAt` (control-plane/routes/
 * expiry.ts), before any request: `90` or `2027-01-01` went to the server and came back as its
 * 400, with a failure in the audit log.
 */
import { upperCaseTime } from "../common/rfc3339.ts";
import { MAX_TOKEN_LIFETIME_DAYS } from "../common/token-state.ts";
import { CliError, durationMs } from "./command.ts";

const DAY_MS = 86_400_000;

/**
 * RFC 3339 with an offset, as the control plane takes it (zod's `z.iso.datetime({offset})`), once
 * its `t` and `z` are upper case (common/rfc3339.ts).
 */
const RFC_3339 =
  /^(\d{4}-\d{2}-\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

export const EXPIRES_TAKES = `a duration from now (30d, 12h, 90m, 45s), an RFC 3339 time (2027-01-31T00:00:00Z) or a date (2027-01-31: the end of that day, UTC), at most ${MAX_TOKEN_LIFETIME_DAYS} days ahead`;

/** A real day of the calendar: 2027-02-30 is none (Date.parse rolls it over to March). */
function realDay(date: string): boolean {
  const ms = Date.parse(`${date}T00:00:00Z`);
  return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 10) === date;
}

/** Whether `text` is an RFC 3339 time with an offset on a real day, as the control plane takes one. */
export function isRfc3339Time(text: string): boolean {
  const day = RFC_3339.exec(upperCaseTime(text))?.[1];
  return day !== undefined && realDay(day);
}

/** Whether `text` is a date alone (2027-01-31), and a real day of the calendar. */
export const isCalendarDate = (text: string) => DATE.test(text) && realDay(text);

/**
 * `--expires` as the `expiresAt` the API takes: a duration from `now`, an RFC 3339 time as
 * given, a date as the end of that day UTC (as the dashboard's form takes one). Anything else,
 * or a time past or more than MAX_TOKEN_LIFETIME_DAYS ahead, is a CliError in one line.
 */
export function expiryOf(text: string, now = Date.now()): string {
  const ms = durationMs(text);
  // RFC 3339 lets T and Z be t and z: sent in upper case, as an older control plane takes them.
  const upper = upperCaseTime(text);
  const time = RFC_3339.exec(upper);
  const expiresAt =
    ms !== undefined
      ? new Date(now + ms).toISOString()
      : time?.[1] && realDay(time[1])
        ? upper
        : isCalendarDate(text)
          ? `${text}T23:59:59Z`
          : undefined;
  if (expiresAt === undefined)
    throw new CliError(`--expires takes ${EXPIRES_TAKES} (got '${text}')`);
  const at = Date.parse(expiresAt);
  if (at <= now || at > now + MAX_TOKEN_LIFETIME_DAYS * DAY_MS)
    throw new CliError(
      `--expires ${text} is ${at <= now ? "past" : `more than ${MAX_TOKEN_LIFETIME_DAYS} days ahead`}: it takes ${EXPIRES_TAKES}`,
    );
  return expiresAt;
}
