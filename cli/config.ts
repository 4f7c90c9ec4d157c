import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { ENV } from "../common/consts.ts";
import { parseHttpUrl } from "../common/http-url.ts";
import { tokenProject } from "../common/jwt.ts";
import { homePaths, readLocalJson, runletHome } from "../control-plane/home.ts";
import { CliError } from "./command.ts";
import { CutOff, connectionCut, cutReadMessage, DELETE_AGAIN, onlyReads } from "./cut-off.ts";
import { deletedProject } from "./deleted-project.ts";
import { notTheControlPlane } from "./not-control-plane.ts";
import { unreachableMessage } from "./unreachable.ts";
import { USER_AGENT } from "./version.ts";

export interface CliConfig {
  baseUrl: string;
  apiUrl: string;
  projectId: string;
  token: string;
  /** Where `projectId` came from, as a person reads it ("RUNLET_PROJECT", "projectId of …"). */
  projectFrom?: string;
}

/**
 * The home whose local.json the CLI reads: RUNLET_HOME, else the nearest `.runlet` holding one
 * in this folder or a folder above it (an app's folder inside the Runlet checkout, say), else
 * `./.runlet`.
 */
export function cliHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env[ENV.home]) return runletHome(env);
  for (let dir = process.cwd(); ; dir = dirname(dir)) {
    if (ownLocalJson(homePaths(join(dir, ".runlet")).localJson)) return join(dir, ".runlet");
    if (dirname(dir) === dir) return runletHome(env);
  }
}

/**
 * A local.json this user made, that no one else may change: one found in a folder above (a
 * shared /tmp, say) could otherwise send this user's RUNLET_TOKEN to someone else's address.
 */
function ownLocalJson(path: string): boolean {
  try {
    const { uid, mode } = statSync(path);
    return uid === process.getuid?.() && (mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/**
 * Credentials from the environment, else from local.json (written by `runlet start` or `runlet
 * init`). `anyProject`: a command that works in no one project (`projects`, `hosts`, `keys`, a
 * user's own token), whose `projectId` may then be "": a user with their token alone in the
 * environment was refused `runlet projects`, the command that lists the ids they lacked.
 */
export async function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  { anyProject = false } = {},
): Promise<CliConfig> {
  const home = cliHome(env);
  const local = await readLocalJson(home);
  const token = env[ENV.token] || local?.token;
  // A service account's token names its one project: a CI job need not say it again.
  const claimed = token ? tokenProject(token) : undefined;
  if (claimed && env[ENV.project] && env[ENV.project] !== claimed)
    throw new CliError(
      `${ENV.project} is ${env[ENV.project]}, but the token is a service account's of project ${claimed} (${tokenSource(env)}): unset ${ENV.project}, or use a token of ${env[ENV.project]}`,
    );
  const config = {
    baseUrl: env[ENV.baseUrl] || local?.baseUrl,
    apiUrl: env[ENV.apiUrl] || local?.apiUrl,
    projectId: env[ENV.project] || claimed || local?.projectId,
    token,
  };
  const missing = Object.entries(config)
    .filter(([k, v]) => !v && !(anyProject && k === "projectId"))
    .map(([k]) => k);
  // The project alone is missing, with a token from the environment that should have named it:
  // a user's token, whose one project is asked for once the addresses are checked (below).
  const fromEnv = env[ENV.token];
  const askProject = missing.length === 1 && missing[0] === "projectId" && fromEnv;
  if (askProject && fromEnv.split(".").length !== 3)
    throw new CliError(`no Runlet credentials (projectId): ${notAToken}`);
  if (missing.length && !askProject) {
    // One that is there but unread (cut short, hand-edited) is not said to be missing.
    const file = homePaths(home).localJson;
    const why = existsSync(file)
      ? `${file} is not one (not JSON, or without baseUrl, apiUrl, projectId and token)`
      : `no ${file} (nor a .runlet/local.json in a folder above this one)`;
    throw new CliError(
      `no Runlet credentials (${missing.join(", ")}): ${why}. Run \`npm start\` first (or \`runlet init\` for a deployed control plane), set ${ENV.home} to its home, or set ${ENV.baseUrl}, ${ENV.apiUrl}, ${ENV.project} and ${ENV.token} (${ENV.project} is read from a service account's token)`,
    );
  }
  // A mistyped address (a CI variable without its scheme) was a TypeError's stack trace.
  for (const [key, name] of [
    ["baseUrl", ENV.baseUrl],
    ["apiUrl", ENV.apiUrl],
  ] as const) {
    const value = config[key] as string;
    if (!parseHttpUrl(value)) {
      const from = env[name] ? name : `${key} of ${homePaths(home).localJson}`;
      throw new CliError(`${from} is not an http(s) URL: '${value}'`);
    }
  }
  if (askProject) return onlyProject({ ...config, projectId: "" } as CliConfig);
  const projectFrom = env[ENV.project]
    ? ENV.project
    : claimed
      ? "its service account's token"
      : `projectId of ${homePaths(home).localJson}`;
  return { ...config, projectId: config.projectId ?? "", projectFrom } as CliConfig;
}

/**
 * A value of RUNLET_TOKEN that is no token at all (a CI secret mistyped or unset upstream): it
 * was told only that credentials were missing, with a list of variables the job had all set.
 */
const notAToken = `${ENV.token} is not a Runlet token (a JWT: three parts joined by dots), so it names no project: check what sets it (a CI secret's name, say)`;

/**
 * A user's token in RUNLET_TOKEN, with no RUNLET_PROJECT nor local.json: the one project they
 * are in, asked of the control plane. In several, or none, it is said which, and what to set:
 * a user handed a token for their one project was refused until they found its id.
 */
async function onlyProject(config: CliConfig): Promise<CliConfig> {
  const { projects } = await callApi<{ projects: Array<{ id: string; name: string }> }>(
    config,
    "GET",
    "/v2/projects",
    "finding your project",
  );
  const [only] = projects;
  if (only && projects.length === 1)
    return {
      ...config,
      projectId: only.id,
      projectFrom: `your one project (${ENV.project} unset)`,
    };
  const named = projects.slice(0, 5).map((p) => `${p.id} (${p.name})`);
  const more = projects.length > 5 ? `, and ${projects.length - 5} more` : "";
  throw new CliError(
    only
      ? `no Runlet credentials (projectId): the user of ${ENV.token} is in ${projects.length} projects: set ${ENV.project} to the id of the one to work in (${named.join(", ")}${more}), or use a service account's token, which names its own`
      : `no Runlet credentials (projectId): the user of ${ENV.token} is in no project: make one (runlet projects create --name NAME), or ask an owner to add you`,
  );
}

/**
 * Where the CLI's token came from, said beside a 401 (`token from RUNLET_TOKEN`): a CI job's
 * log then tells an expired or mistyped secret from a stale local.json.
 */
export function tokenSource(env: NodeJS.ProcessEnv = process.env): string {
  return `token from ${env[ENV.token] ? ENV.token : homePaths(cliHome(env)).localJson}`;
}

/** Where the control plane's address came from, for a message that says which to change. */
export function baseUrlSource(env: NodeJS.ProcessEnv = process.env): string {
  return env[ENV.baseUrl] ? ENV.baseUrl : `baseUrl of ${homePaths(cliHome(env)).localJson}`;
}

/**
 * Reads a JSON answer; a non-2xx becomes a CliError carrying the server's `message`. An answer of
 * another server than the control plane says so (not-control-plane.ts): `source` names where
 * its address came from, `url` the address (`res.url`, empty for a Response made by hand).
 */
export async function readAnswer<T>(
  res: Response,
  what: string,
  source = baseUrlSource(),
  url = res.url,
): Promise<T> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const elsewhere = url ? notTheControlPlane(res, text, body, source, url) : undefined;
  if (elsewhere) throw new CliError(elsewhere, { status: res.status }, elsewhere);
  if (!res.ok) {
    // A body that is not ours (a proxy's HTML error page) is cut to one line of 200 characters.
    const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 200);
    const message =
      (body as { message?: string } | undefined)?.message ?? (excerpt || res.statusText);
    const code = (body as { code?: unknown } | undefined)?.code;
    throw new CliError(
      `${what} failed (${res.status}): ${message}`,
      { status: res.status, ...(typeof code === "string" ? { code } : {}) },
      message,
    );
  }
  return body as T;
}

/** After this long without an answer, and every so often after, the CLI says it still waits. */
const PATIENCE_NOTE_MS = 3_000;
const PATIENCE_EVERY_MS = 10_000;

/**
 * A wait said on stderr: `note(seconds waited)` after `firstMs`, then every `everyMs`, until
 * `stop` (a silent wait reads as a hang).
 */
export function waitingNotes(
  firstMs: number,
  everyMs: number,
  note: (seconds: number) => string,
): { stop(): void } {
  const started = Date.now();
  let timer = setTimeout(function again() {
    process.stderr.write(`${note(Math.round((Date.now() - started) / 1000))}\n`);
    timer = setTimeout(again, everyMs);
  }, firstMs);
  return { stop: () => clearTimeout(timer) };
}

/**
 * Every request of the CLI to the control plane goes through here, with the CLI's User-Agent:
 * the audit log records it (a deploy's, sent by node:http, had none; the rest said `node`).
 * `send`: how the request goes (`patientFetch` for one whose answer may take minutes);
 * `waitingFor`: what the answer waits on, for the note a long wait prints (the control plane).
 */
export async function request(
  url: string,
  init: RequestInit,
  what: string,
  send: (url: string, init: RequestInit) => Promise<Response> = fetch,
  waitingFor = new URL(url).origin,
): Promise<Response> {
  // A deploy or a delete waits for every runtime host that answers, up to 30 s for one that
  // does not (docs/hosts.md).
  const waiting = waitingNotes(
    PATIENCE_NOTE_MS,
    PATIENCE_EVERY_MS,
    (s) => `(${what}: still waiting for ${waitingFor}, ${s} s)`,
  );
  try {
    const headers = new Headers(init.headers);
    headers.set("user-agent", USER_AGENT);
    return await send(url, { ...init, headers });
  } catch (err) {
    if (connectionCut(err) && onlyReads(init.method)) throw new CliError(cutReadMessage(what, url));
    if (connectionCut(err))
      throw init.method === "DELETE" ? new CutOff(what, url, DELETE_AGAIN) : new CutOff(what, url);
    throw new CliError(unreachableMessage(what, url, cliHome()));
  } finally {
    waiting.stop();
  }
}

/** Calls the management API of the configured project: `path` is below `/v2/projects/{id}`. */
export function callProject<T>(
  config: CliConfig,
  method: string,
  path: string,
  what: string,
  body?: unknown,
): Promise<T> {
  return callApi<T>(config, method, `/v2/projects/${config.projectId}${path}`, what, body);
}

/** Calls the management API: `path` is absolute (`/v2/...`). */
export async function callApi<T>(
  config: CliConfig,
  method: string,
  path: string,
  what: string,
  body?: unknown,
): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${config.token}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await request(
    `${config.baseUrl}${path}`,
    { method, headers, body: body === undefined ? undefined : JSON.stringify(body) },
    what,
  );
  try {
    return await readAnswer<T>(res, what);
  } catch (err) {
    throw deletedProject(config, path, what, err) ?? err;
  }
}

/** Renders rows as aligned columns under a header line. */
export function columns(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  return [headers, ...rows]
    .map((r) =>
      r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  "),
    )
    .join("\n");
}

/**
 * A listing on standard output as a table, or, with no rows, `empty` on standard error (README,
 * "The CLI in scripts and CI": an empty list is a note). A header alone on standard output was
 * read as a row: `runlet projects | tail -n +2` was empty, but `| wc -l` counted one.
 */
export function printTable(headers: string[], rows: string[][], empty: string): void {
  if (rows.length === 0) console.error(empty);
  else console.log(columns(headers, rows));
}
