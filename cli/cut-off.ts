/**
 * A request whose connection was cut after it was sent (the server stopped or restarted before it
 * answered), told apart from one that never reached a server ("cannot reach"): the first may have
 * been carried out — a run may have run, an app been deleted — and the CLI says so, where it said
 * "cannot reach … is Runlet running?" for both, and a user ran again what had run.
 */

import { CliError } from "./command.ts";

/** Errors of a connection that was made, then closed or reset before the answer came. */
const CUT_CODES = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"]);

/** Whether `err` (a fetch's or node:http's error, or one wrapping it as `cause`) is a cut. */
export function connectionCut(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const { code } = e as { code?: unknown };
    if (typeof code === "string" && CUT_CODES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * What the CLI says of a cut request (`what`: "deploy", "run", …) to `url`'s server; `check`:
 * how to see whether it was carried out.
 */
export function cutMessage(what: string, url: string, check: string): string {
  return `${cutHead(what, url)} The request had reached it, so it may have been carried out: ${check}`;
}

/**
 * What the CLI says of a cut read (a `GET`: `runlet apps`, `status`, `audit-log`…), which changes
 * nothing whether it was carried out or not. It was told "may have been carried out: check what
 * it did before sending it again", which sent a user looking for what a listing had changed.
 */
export function cutReadMessage(what: string, url: string): string {
  return `${cutHead(what, url)} It only reads, so it changed nothing: run it again once Runlet answers.`;
}

/** Whether a request of `method` only reads (nothing is changed by sending it again). */
export const onlyReads = (method: string | undefined) =>
  ["GET", "HEAD"].includes((method ?? "GET").toUpperCase());

/** The first sentence of every message of a cut request. */
export function cutHead(what: string, url: string): string {
  return `${what} failed: the connection to ${new URL(url).origin} was cut before it answered (did Runlet stop or restart?).`;
}

/**
 * A change whose connection was cut: said with the general advice, which a command that knows
 * how to see whether its change was made replaces with that (`withCheck`).
 */
export class CutOff extends CliError {
  constructor(
    readonly what: string,
    readonly url: string,
    check = "check what it did before sending it again",
  ) {
    super(cutMessage(what, url, check));
  }
}

/**
 * What a cut `DELETE` says: sent again, it is done, or answered as done already (a 404 for what
 * is gone, a 204 for a token revoked again).
 */
export const DELETE_AGAIN = "sending it again does no harm: nothing is deleted twice";

/** `err`, or for a cut change, the same said with `check`: how to see whether it was made. */
export function withCheck(err: unknown, check: string): unknown {
  return err instanceof CutOff ? new CliError(cutMessage(err.what, err.url, check)) : err;
}
