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
  const status = await pool.use(
    deployment,
    (workload) => proxy(req, res, httpWorkload(workload), target, limits.callTimeoutMs, gone),
    { signal: gone },
  );
  reports.ended(runId, {
    projectId: names.project,
    app: names.app,
    function: requestName(req.method, target),
    status: status !== undefined && status < 500 ? "success" : "failure",
    ...(status !== undefined ? { statusCode: status } : {}),
    runTimeMs: msSince(started),
    ...(status !== undefined && status >= 500 ? { error: `the app answered ${status}` } : {}),
  });
}

/**
 * Sends the request to the replica and pipes its answer back; resolves once it is sent, with
 * the app's status (undefined when the answer broke off).
 */
function proxy(
  req: IncomingMessage,
  res: ServerResponse,
  replica: HttpWorkload,
  target: string,
  timeoutMs: number,
  gone: AbortSignal,
): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    let answered = false;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true; // its request is closed; the app's server goes on serving the others
      upstream.destroy();
      if (answered) res.destroy();
      else reject(new HttpError(504, `the app did not answer within ${timeoutMs / 1000} s`));
      resolve(undefined);
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
          resolve(answer.statusCode);
        });
        answer.on("error", () => {
          clearTimeout(timer);
          res.destroy(); // cut off mid-answer: the caller sees a broken response, not a short one
          resolve(undefined);
        });
      },
    );
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (gone.aborted || timedOut) return; // destroyed here: the replica is fine
      if (answered) {
        res.destroy();
        resolve(undefined);
        return;
      }
      // The replica's server is gone or refused: it takes no more requests.
      if (err.code === "ECONNREFUSED" || err.code === "ECONNRESET") replica.fail();
      reject(new HttpError(502, `the app's server failed to answer (${err.code ?? err.message})`));
    });
    req.pipe(upstream);
    // The caller went away before the whole answer was sent (before its body was read, or while
    // the app works): the app's request is closed too, as any reverse proxy does, so the app can
    // stop and the replica's slot is free again.
    const leave = () => {
      clearTimeout(timer);
      upstream.destroy();
      resolve(undefined);
    };
    if (gone.aborted) leave();
    else gone.addEventListener("abort", leave, { once: true });
  });
}
