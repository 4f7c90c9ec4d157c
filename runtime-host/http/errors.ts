import { WorkloadError, type WorkloadFailure } from "../pool/workload.ts";

/** An error a route answers with: its status and a message safe to show a caller. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Fields the error body carries besides `{message, code}`. */
    readonly more: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

/** The status a route answers a replica's failure with. */
const WORKLOAD_STATUS: Record<WorkloadFailure["kind"], number> = {
  "load-failed": 502,
  exited: 502,
  timeout: 504,
  busy: 429,
  removed: 404,
  closing: 503,
  // Its caller went away: the answer is never read.
  withdrawn: 409,
};

/** What a route's error is answered with: an `HttpError` as it is, a replica's failure by its kind. */
export function asHttpError(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (err instanceof WorkloadError) {
    const { failure } = err;
    // The Worker tries another host for a call this one cannot serve at all, turned away
    // unstarted as it stops, or could not start a replica for its own reasons (its sandbox,
    // the project's secrets, the version's files): the app's code never ran.
    const elsewhere =
      ((failure.kind === "busy" || failure.kind === "closing") && failure.elsewhere) ||
      (failure.kind === "load-failed" && failure.host === true);
    // How long a call that failed once it ran did run: the Worker reports it to the runs index.
    const ran = err.runTimeMs === undefined ? {} : { run_time_ms: err.runTimeMs };
    const more = elsewhere ? { elsewhere: true, ...ran } : ran;
    return new HttpError(WORKLOAD_STATUS[failure.kind], err.message, more);
  }
  return undefined;
}
