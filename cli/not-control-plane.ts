/**
 * Whether an answer the CLI asked the management API for came from Runlet's control plane. The
 * run API's address given for the control plane's (RUNLET_BASE_URL and RUNLET_API_URL swapped:
 * 8787 for 8080) made every command say `listing apps failed (404): no route for GET
 * /v2/projects/…`, as if the route were missing; another server that answered 200 without JSON
 * (a web server on that port) made `runlet apps` end in a TypeError and its stack. `runlet run`
 * says the converse already (run-api.ts's notTheRunApi).
 */
import { ENV } from "../common/consts.ts";

/**
 * What to say of `res`, an answer that is not the control plane's: the Worker's refusal of a path
 * it has no route for (which names no `req_` request, as every answer of the control plane does),
 * or a 2xx whose body is not JSON. Else undefined. `source`: where the address came from
 * (`RUNLET_BASE_URL`, `baseUrl of …/local.json`, `--control-plane`); `url`: the address asked.
 */
export function notTheControlPlane(
  res: Response,
  text: string,
  body: unknown,
  source: string,
  url: string,
): string | undefined {
  const message = (body as { message?: unknown } | undefined)?.message;
  const ours = res.headers.get("x-request-id")?.startsWith("req_") === true;
  const worker =
    !res.ok && !ours && typeof message === "string" && message.startsWith("no route for ");
  const notJson = res.ok && text.trim() !== "" && (typeof body !== "object" || body === null);
  if (!worker && !notJson) return undefined;
  const which = worker
    ? "Runlet's run API (the Worker, RUNLET_API_URL's), not its control plane"
    : "not Runlet's control plane (its answer is not JSON)";
  const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 200);
  const fix = source.startsWith("--")
    ? `Give ${source} the control plane's address`
    : `Set ${ENV.baseUrl} to the control plane's address, the management API's (runlet start prints it on its "control plane" line)`;
  return `${new URL(url).origin} (${source}) is ${which}: it answered ${res.status} ${excerpt}. ${fix}`;
}
