/**
 * `* /internal/http/{project}/{app}/{path…}`: one request to a custom-runtime app, forwarded to a
 * replica's own server — method, path, query, headers and body as they came, and its response
 * streamed back unchanged. The replica slot is held until the response has been sent, or until
 * the caller has gone away (the app's request is then closed). At capacity the request waits for
 * a slot as a synchronous call does (see invoke.ts).
 */
import { type IncomingMessage, request, type ServerResponse } from "node:http";
import { hostPath } from "../../common/protocol/paths.ts";
import type { HostContext } from "../context.ts";
import { HttpError } from "../http/errors.ts";
import { appTarget, deploymentOf, forwardable, projectAndApp, runIdOf } from "../http/params.ts";
import { callerGone } from "../http/respond.ts";
import { type HttpWorkload, httpWorkload } from "../pool/workload.ts";
import { msSince, requestName } from "../runs/describe.ts";
import { unanswered } from "../runtimes/custom/unanswered.ts";

export async function forwardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { versions, pool, limits, reports }: HostContext,
): Promise<void> {
  const names = projectAndApp(params);
  const runId = runIdOf(req); // required, and passed on to the app as it came
  const deployment = await deploymentOf(
    versions,
    names,
    "custom",
    `app '${names.app}' uses the managed runtime: call its functions with POST /{function}`,
  );
  const target = appTarget(req, hostPath.http(names.project, names.app, ""));
  const started = performance.now();
  // A replica's failure (busy, crashed, …) is answered by its kind (http/errors.ts).
  const gone = callerGone(res);
  const listed = {
    projectId: names.project,
    app: names.app,
    function: requestName(req.method, target),
  };
  const ended = await pool
    .use(
      deployment,
      (workload) => proxy(req, res, httpWorkload(workload), target, limits.callTimeoutMs, gone),
      { signal: gone, started: () => reports.syncStarted(runId, listed) },
    )
    .finally(() => reports.syncOver(runId));
  const error =
    "error" in ended
      ? ended.error
      : ended.status >= 500
        ? `the app answered ${ended.status}`
        : undefined;
  reports.ended(runId, {
    ...listed,
    status: error === undefined ? "success" : "failure",
    ...("status" in ended ? { statusCode: ended.status } : {}),
    runTimeMs: msSince(started),
    ...(error === undefined ? {} : { error }),
  });
}

/** How a forwarded request ended: the app's whole answer sent on, or why it was not. */
type Ended = { status: number } | { error: string };

/** The caller left before the app's answer was whole: the run failed, and says why. */
const CALLER_LEFT = "the caller went away before the answer ended";

/**
 * Sends the request to the replica and pipes its answer back; resolves once it is sent, with
 * the app's status, or with why it broke off (the caller left, the app's answer was cut off or
 * outlasted the limit).
 */
function proxy(
  req: IncomingMessage,
  res: ServerResponse,
  replica: HttpWorkload,
  target: string,
  timeoutMs: number,
  gone: AbortSignal,
): Promise<Ended> {
  const sent = performance.now();
  // A request that failed unanswered ran this long: the Worker reports it to the runs index.
  const failed = (status: number, message: string, ranMs = msSince(sent)) =>
    new HttpError(status, message, { run_time_ms: ranMs });
  return new Promise((resolve, reject) => {
    let answered = false;
    let timedOut = false;
    const cutOff = (reason: string) => ({ error: `the app's answer was cut off: ${reason}` });
    const timer = setTimeout(() => {
      timedOut = true; // its request is closed; the app's server goes on serving the others
      upstream.destroy();
      // A stream that outlasted the limit was answering: it was cut there, not unanswered.
      const limit = `${timeoutMs / 1000} s`;
      const error = answered
        ? `the app's answer did not end within ${limit}, the synchronous limit: it was cut off there`
        : `the app did not answer within ${limit}`;
      if (answered) res.destroy();
      else reject(failed(504, error));
      resolve({ error });
    }, timeoutMs);
    const upstream = request(
      `${replica.origin}${target}`,
      { method: req.method, headers: forwardable(req.headers), socketPath: replica.socketPath },
      (answer) => {
        answered = true;
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, forwardable(answer.headers));
        answer.pipe(res);
        answer.on("end", () => {
          clearTimeout(timer);
          resolve({ status: answer.statusCode ?? 502 });
        });
        answer.on("error", (err: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          res.destroy(); // cut off mid-answer: the caller sees a broken response, not a short one
          resolve(cutOff(err.code ?? err.message));
        });
      },
    );
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (gone.aborted || timedOut) return; // destroyed here: the replica is fine
      if (answered) {
        res.destroy();
        resolve(cutOff(err.code ?? err.message));
        return;
      }
      const ranMs = msSince(sent); // not the healthcheck's time after it
      void unanswered(replica, err).then((message) => reject(failed(502, message, ranMs)));
    });
    req.pipe(upstream);
    // The caller went away before the whole answer was sent (before its body was read, or while
    // the app works): the app's request is closed too, as any reverse proxy does, so the app can
    // stop and the replica's slot is free again.
    const leave = () => {
      clearTimeout(timer);
      upstream.destroy();
      resolve({ error: CALLER_LEFT });
    };
    if (gone.aborted) leave();
    else gone.addEventListener("abort", leave, { once: true });
  });
}
