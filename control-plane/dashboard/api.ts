/**
 * The dashboard is a client of the public APIs: the management API (in-process) and the run
 * API (the Worker, for a run's own record and its cancellation), both called with the session's
 * token. What a page may show or do is what that token may — the same checks, the same audit
 * entries as a script would get.
 */
import type { Context } from "hono";
import type { AppEnv } from "../context.ts";
import type { Session } from "./session.ts";
import { viaHeaders } from "./via.ts";

/** An answer of either API: its data when 2xx, else the API's `{message}`. */
export type Answer<T> =
  | { ok: true; status: number; data: T }
  | { ok: false; status: number; message: string };

export type DashEnv = {
  Variables: AppEnv["Variables"] & { session: Session; api: Api };
};

export type DashCtx = Context<DashEnv>;

/** The management app's own `request` (in-process). */
export type InProcess = (path: string, init: RequestInit) => Response | Promise<Response>;

export interface Api {
  /** A call to `/v2/projects/{current project}{path}`. */
  project<T>(method: string, path: string, body?: unknown): Promise<Answer<T>>;
  /** A call to `/v2{path}` outside any project: this Runlet's own routes (`/v2/hosts`). */
  installation<T>(method: string, path: string, body?: unknown): Promise<Answer<T>>;
  /** A GET of `/v2/projects/{current project}{path}`, its answer as it is (to stream through). */
  raw(path: string): Promise<Response>;
  /** A call to the run API (`{api_url}{path}`), with `extra` headers (never logged). */
  runs<T>(method: string, path: string, extra?: Record<string, string>): Promise<Answer<T>>;
}

export function apiFor(c: DashCtx, session: Session, inProcess: InProcess): Api {
  const headers = {
    ...viaHeaders({
      ip: c.var.deps.clientIp?.(c),
      userAgent: c.req.header("user-agent"),
      requestId: c.var.requestId,
    }),
    authorization: `Bearer ${session.token}`,
  };
  const call = async (method: string, path: string, body: unknown) => {
    const init: RequestInit = { method, headers: { ...headers } };
    if (body !== undefined) {
      init.headers = { ...headers, "content-type": "application/json" };
      init.body = JSON.stringify(body);
    }
    return inProcess(path, init);
  };
  return {
    async project(method, path, body) {
      return answer(await call(method, `/v2/projects/${session.projectId}${path}`, body));
    },
    async installation(method, path, body) {
      return answer(await call(method, `/v2${path}`, body));
    },
    async raw(path) {
      return inProcess(`/v2/projects/${session.projectId}${path}`, { headers });
    },
    async runs(method, path, extra) {
      const apiUrl = c.var.deps.apiUrl;
      if (!apiUrl) return { ok: false, status: 502, message: "the run API's address is not set" };
      try {
        const init: RequestInit = {
          method,
          headers: { ...extra, authorization: headers.authorization },
          signal: AbortSignal.timeout(10_000),
        };
        const { runApi } = c.var.deps;
        const url = `${apiUrl}${path}`;
        const res = await (runApi ? runApi.fetch(url, init) : fetch(url, init));
        return answer(res);
      } catch {
        return { ok: false, status: 502, message: "the run API (the Worker) is not reachable" };
      }
    },
  };
}

async function answer<T>(res: Response): Promise<Answer<T>> {
  const body: unknown = res.status === 204 ? null : await res.json().catch(() => null);
  if (res.ok) return { ok: true, status: res.status, data: body as T };
  const message = (body as { message?: unknown } | null)?.message;
  return {
    ok: false,
    status: res.status,
    message: typeof message === "string" ? inPageTerms(message) : `the API answered ${res.status}`,
  };
}

/**
 * The API's names of what a page calls otherwise: its fields (Endpoint, Secret) and its page
 * links (`cursor`), so a refusal speaks of what the reader typed or clicked.
 */
const PAGE_TERMS: Array<[RegExp, string]> = [
  [/\bwebhookEndpoint\b/g, "the endpoint"],
  [/\bX-Webhook-Secret\b/gi, "the secret"],
  [/\bnextToken\b/g, "the page link's cursor"],
];

function inPageTerms(message: string): string {
  return PAGE_TERMS.reduce((text, [term, words]) => text.replace(term, words), message);
}
