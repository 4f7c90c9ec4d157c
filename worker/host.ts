import { HEADER } from "../common/consts.ts";
import type { Env } from "./env.ts";
import { RunApiError } from "./errors.ts";

/** What the runtime host answers for a managed-runtime call. */
export type Invocation =
  | { ok: true; result: unknown; run_time_ms: number }
  | { ok: false; error: { message: string }; run_time_ms: number };

/** Calls `fn` of an app on its runtime host; host-level failures become `RunApiError`s. */
export async function invokeOnHost(
  env: Env,
  target: { project: string; app: string; fn: string; runId: string },
  body: ArrayBuffer,
): Promise<Invocation> {
  const { project, app, fn, runId } = target;
  let res: Response;
  try {
    res = await fetch(
      `${env.RUNTIME_HOST_URL}/internal/invoke/${project}/${app}/${encodeURIComponent(fn)}`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${env.INTERNAL_TOKEN}`,
          "content-type": "application/json",
          [HEADER.runId]: runId,
        },
        body,
      },
    );
  } catch {
    throw new RunApiError(502, "the runtime host is not reachable");
  }
  if (res.ok) return (await res.json()) as Invocation;
  throw await hostError(res);
}

/** The run API error for an error answer of the host itself. */
export async function hostError(res: Response): Promise<RunApiError> {
  const { message } = (await res.json().catch(() => ({}))) as { message?: string };
  // The host's 401 means our own internal token is wrong: the caller did nothing wrong.
  const status =
    res.status === 400 ||
    res.status === 404 ||
    res.status === 413 ||
    res.status === 429 ||
    res.status === 504
      ? res.status
      : 502;
  return new RunApiError(status, message ?? `the runtime host answered ${res.status}`);
}

/**
 * The caller's headers as a custom app gets them: without their Runlet token (app code could
 * act as the caller with it) and without the webhook secret (kept only for the delivery).
 */
export function appHeaders(headers: Headers): Headers {
  const out = new Headers(headers);
  out.delete("authorization");
  out.delete(HEADER.webhookSecret);
  return out;
}

/**
 * Forwards a request to a custom-runtime app through its runtime host: method, the path after
 * the app, query, headers (the caller's token replaced by the host's) and body, unchanged. The
 * app's answer comes back as it is, streamed; the host's own failures become `RunApiError`s.
 */
export async function forwardToHost(
  env: Env,
  target: { project: string; app: string; pathAndQuery: string; runId: string },
  request: Request,
): Promise<Response> {
  const { project, app, pathAndQuery, runId } = target;
  const headers = appHeaders(request.headers);
  headers.set("authorization", `Bearer ${env.INTERNAL_TOKEN}`);
  headers.set(HEADER.runId, runId);
  let res: Response;
  try {
    res = await fetch(`${env.RUNTIME_HOST_URL}/internal/http/${project}/${app}${pathAndQuery}`, {
      method: request.method,
      headers,
      body: request.method === "GET" || request.method === "HEAD" ? undefined : request.body,
      redirect: "manual",
    });
  } catch {
    throw new RunApiError(502, "the runtime host is not reachable");
  }
  if (res.headers.get(HEADER.hostError)) throw await hostError(res);
  return res;
}
