import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { AppConfig } from "../../common/app-config.ts";
import { HEADER } from "../../common/consts.ts";
import type { AppVersions } from "../app-versions.ts";
import type { Deployment } from "../apps.ts";
import { NAME_PATTERN } from "../names.ts";
import { HttpError } from "./errors.ts";

/** A project's or an app's name from a route's path (`label` says which); 400 unless valid. */
export function nameOf(label: "project" | "app", value = ""): string {
  if (NAME_PATTERN.test(value)) return value;
  throw new HttpError(
    400,
    `${label} must be 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit`,
  );
}

/** The project and app of a route's path; 400 unless both are valid names. */
export function projectAndApp(params: readonly string[]): { project: string; app: string } {
  return { project: nameOf("project", params[0]), app: nameOf("app", params[1]) };
}

/**
 * The app's current deployment, which must use `runtime`: 404 if it is not deployed, 400 with
 * `otherwise` (what to do instead) if it uses the other runtime.
 */
export async function deploymentOf(
  versions: AppVersions,
  { project, app }: { project: string; app: string },
  runtime: AppConfig["runtime"],
  otherwise: string,
  accepted?: { appId: string | undefined; runId: string },
): Promise<Deployment> {
  const acceptedFor = accepted?.appId;
  const deployment = await versions.deployment(project, app, acceptedFor);
  if (!deployment) {
    // A run accepted for an app (its id) whose app is gone was accepted before its delete.
    const why = acceptedFor ? "was deleted after the run was accepted" : "is not deployed";
    throw new HttpError(404, `app '${app}' ${why} in project '${project}'`);
  }
  if (acceptedFor && versions.isLaterApp(project, app, acceptedFor, accepted.runId)) {
    throw new HttpError(
      404,
      `app '${app}' was deleted after the run was accepted: the app deployed since under its name does not run it`,
    );
  }
  if (deployment.config.runtime !== runtime) throw new HttpError(400, otherwise);
  return deployment;
}

/** The id of the app an async run was accepted for (`X-Runlet-App-Id`), if the Worker sent it. */
export function acceptedForOf(req: IncomingMessage): string | undefined {
  const raw = req.headers[HEADER.appId.toLowerCase()];
  if (raw === undefined) return undefined;
  if (typeof raw !== "string" || !/^[0-9A-Za-z_]{1,64}$/.test(raw))
    throw new HttpError(400, `the ${HEADER.appId} header must be an app id`);
  return raw;
}

const MAX_FN_LENGTH = 256;
const MAX_RUN_ID_LENGTH = 128;

export function functionName(raw: string): string {
  let fn: string;
  try {
    fn = decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, "the function name is not valid percent-encoding");
  }
  if (fn.length > MAX_FN_LENGTH) {
    throw new HttpError(400, `function names are at most ${MAX_FN_LENGTH} characters`);
  }
  return fn;
}

export function runIdOf(req: IncomingMessage): string {
  const runId = req.headers[HEADER.runId.toLowerCase()];
  if (typeof runId !== "string" || runId.trim() === "") {
    throw new HttpError(400, `the ${HEADER.runId} header is required`);
  }
  if (runId.length > MAX_RUN_ID_LENGTH) {
    throw new HttpError(400, `the ${HEADER.runId} header is longer than ${MAX_RUN_ID_LENGTH}`);
  }
  return runId.trim();
}

/**
 * Headers that describe one connection, not the message (RFC 9110 §7.6.1), the host's token, and
 * Runlet's own between the Worker and the host: an app's answer could otherwise pass for the
 * host's error (`X-Runlet-Host-Error`), or for the host's answer to an async hand-over.
 */
const NOT_FORWARDED = new Set([
  "authorization",
  HEADER.hostError.toLowerCase(),
  HEADER.callbackUrl.toLowerCase(),
  HEADER.waitMs.toLowerCase(),
  HEADER.appId.toLowerCase(),
  HEADER.noResult.toLowerCase(),
  "connection",
  "host",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

export function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!NOT_FORWARDED.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * What follows `prefix` in the request's URL (the path after the app, and the query) exactly as
 * sent: the request to make of the app.
 */
export function appTarget(req: IncomingMessage, prefix: string): string {
  const pathAndQuery = (req.url ?? "").slice(prefix.length) || "/";
  return pathAndQuery.startsWith("?") ? `/${pathAndQuery}` : pathAndQuery;
}
