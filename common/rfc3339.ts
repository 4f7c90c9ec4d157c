/**
 * RFC 3339 times as Runlet reads them. Its §5.6 lets the `T` between date and time and the `Z`
 * of UTC be written in lower case (`2026-11-27t00:00:00z`); zod's ISO check, which the control
 * plane validates with, and the CLI's own pattern took them in upper case only, so such a time
 * was refused with 400. Imports nothing: the CLI and the control plane share it.
 */

/** Only a date-time's characters: digits, `-`, `:`, `.`, `+`, and `T`/`Z` in either case. */
const TIME_CHARACTERS = /^[0-9tTzZ:.+-]+$/;

/** `text` with a time's `t` and `z` as `T` and `Z`; anything else as it came. */
export function upperCaseTime(text: string): string {
  return TIME_CHARACTERS.test(text) ? text.toUpperCase() : text;
}
