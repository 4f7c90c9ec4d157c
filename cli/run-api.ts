/**
 * The run API (`{api_url}/v4/...`) for the CLI's commands, through `runlet/client`: the client of
 * the configured project, a run's app (from the runs index), and a client error as the one line
 * a command prints.
 */
import { createClient, type RunletClient, RunletError } from "runlet/client";
import { ENV, MAX_WEBHOOK_SECRET_LENGTH } from "../common/consts.ts";
import { parseHttpUrl } from "../common/http-url.ts";
import { RUN_ID, timeOfId } from "../common/ids.ts";
import { homePaths } from "../control-plane/home.ts";
import { CliError } from "./command.ts";
import { type CliConfig, callProject, cliHome } from "./config.ts";
import { connectionCut, cutMessage, cutReadMessage } from "./cut-off.ts";
import { unreachableMessage } from "./unreachable.ts";
import { USER_AGENT } from "./version.ts";

/** The run API's client, its requests carrying the CLI's User-Agent as `request`'s do. */
export function runApi(config: CliConfig): RunletClient {
  return createClient({
    apiUrl: config.apiUrl,
    project: config.projectId,
    token: config.token,
    fetch: (url, init) =>
      fetch(url, { ...init, headers: { ...init.headers, "user-agent": USER_AGENT } }),
  });
}

/** A run as the runs index lists it (GET /v2/projects/{id}/runs/{run_id}): what the CLI reads. */
export interface IndexedRun {
  app: string;
  function: string;
  async: boolean;
  status: string;
}

/** The run as the runs index has it, waited for while it may not have reached it yet. */
export async function indexedRun(config: CliConfig, runId: string): Promise<IndexedRun> {
  for (;;) {
    try {
      return await callProject<IndexedRun>(
        config,
        "GET",
        `/runs/${encodeURIComponent(runId)}`,
        `looking up ${runId}`,
      );
    } catch (err) {
      if (!notIndexedYet(err, runId)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** The app of a run, which its URL on the Worker names: the runs index knows it. */
export async function appOfRun(config: CliConfig, runId: string): Promise<string> {
  return (await indexedRun(config, runId)).app;
}

/**
 * The exit code of a command that waited for a run to end (`status --wait`, `logs --follow`): 0
 * if it ended `success`, 1 if `failure` or `cancelled`, so a script can wait on it.
 */
export function endedExitCode(status: string): number {
  return status === "success" ? 0 : 1;
}

/**
 * A 404 for a run accepted a moment ago: the Worker reports runs to the runs index in batches,
 * so `runlet run --async` then at once `runlet status` may ask before it has the run. Such a run
 * is waited for, 10 s from its id's time.
 */
export function notIndexedYet(err: unknown, runId: string): boolean {
  const made = timeOfId(runId);
  const recent = made !== undefined && Date.now() - made < 10_000;
  return err instanceof CliError && err.answer?.status === 404 && recent;
}

/** The answer's own `message`, if it had one (not the client's words for a body it could not read). */
export function answeredMessage(err: RunletError): string | undefined {
  const body = err.body as { message?: unknown } | undefined;
  return typeof body === "object" && typeof body?.message === "string" ? body.message : undefined;
}

/**
 * What a command says of a failed call on a run's URL (`what`: "status", "cancel", ...): that
 * Runlet cannot be reached, that RUNLET_API_URL is not the run API (as `run` says it), or the
 * Worker's message. Anything else than a RunletError is thrown as it is. `reads`: the call only
 * read (`status`), so a cut one changed nothing.
 */
export function cliErrorOf(
  err: unknown,
  what: string,
  config: CliConfig,
  { reads = false } = {},
): unknown {
  if (!(err instanceof RunletError)) return err;
  if (err.code === "network_error" && connectionCut(err.cause))
    return new CliError(
      reads
        ? cutReadMessage(what, config.apiUrl)
        : cutMessage(what, config.apiUrl, "check the run before sending it again"),
    );
  if (err.code === "network_error") return unreachable(what, config);
  // `waitFor` past its time: the client's own words (the run has not ended, and goes on).
  if (err.code === "timeout") return new CliError(`${err.message}: it goes on`);
  // The control plane's port given for the Worker's said "no route for GET /v4/…", an HTML page
  // "the worker answered 200": neither named RUNLET_API_URL.
  const elsewhere = notTheRunApi(err, config, { runUrl: true });
  if (elsewhere) return new CliError(elsewhere);
  return new CliError(answeredMessage(err) ?? `the worker answered ${err.status}`, {
    status: err.status,
    code: err.code,
  });
}

/**
 * What `run`, `status`, `cancel` and `redeliver` say of an answer below 500 that is not the run
 * API's, else undefined: the Worker stamps a run id (`run_…`) in `X-Request-Id` on every answer
 * of a run path, a custom app's own included, and a refusal of its own carries `run_id` in its
 * body too. An answer with neither came from something else at RUNLET_API_URL: the control
 * plane's port given for the Worker's answered 404 "no route for POST /v4/…" with its own
 * `req_…` id, which read as a custom app's answer, and that id as a run id.
 */
export function notTheRunApi(
  err: RunletError,
  config: CliConfig,
  { runUrl = false } = {},
): string | undefined {
  const { run_id: ownId, message } = (err.body ?? {}) as { run_id?: unknown; message?: unknown };
  // Status 0: no answer at all (`network_error`, `waitFor`'s `timeout`), nothing to judge.
  if (err.status === 0 || err.status >= 500 || typeof ownId === "string") return;
  // `runUrl`: a call on a run's URL (status, cancel, redeliver), whose answers from the Worker all
  // carry `run_id` in their body; the client puts the run asked for in `runId` when the answer
  // names none, so that is no sign. A run id of another shape is no run's URL: the Worker sent
  // that path on to the app, whose answer it is.
  if (runUrl ? !RUN_ID.test(err.runId ?? "") : RUN_ID.test(err.runId ?? "")) return;
  const from = process.env[ENV.apiUrl] ? ENV.apiUrl : `apiUrl of ${homePaths(cliHome()).localJson}`;
  const controlPlane =
    err.runId?.startsWith("req_") ||
    (typeof message === "string" && message.startsWith("no route for "));
  const which = controlPlane
    ? "Runlet's control plane (the management API, RUNLET_BASE_URL's), not its run API"
    : "not Runlet's run API (its answer carries no run id)";
  const said = typeof err.body === "string" ? err.body : JSON.stringify(err.body ?? "");
  return `${new URL(config.apiUrl).origin} (${from}) is ${which}: it answered ${err.status}${said ? ` ${said.slice(0, 200)}` : ""}. Set ${ENV.apiUrl} to the run API's address, the Worker's (runlet start prints it on its "worker" line)`;
}

export function unreachable(what: string, config: CliConfig): CliError {
  return new CliError(unreachableMessage(what, config.apiUrl, cliHome()));
}

/**
 * What `run --webhook` and `redeliver` say on stderr when no secret signs the delivery (`what`:
 * "webhook delivery", "redelivery"): its receiver cannot tell it from anyone's.
 */
export function unsignedNote(what: string): string {
  return `Note: the ${what} is unsigned (no --webhook-secret, no RUNLET_WEBHOOK_SECRET): its receiver cannot verify that it comes from Runlet (docs/webhooks.md).`;
}

/**
 * The secret that signs a run's webhook: `--webhook-secret`, else `RUNLET_WEBHOOK_SECRET` (which
 * keeps it out of the process list and the shell's history); none when neither is set.
 */
export function webhookSecret(flag: unknown): string | undefined {
  // A blank one was sent, and refused with the run API's words for a header the command line
  // never wrote: "X-Webhook-Secret is empty: send the secret, or no header".
  if (typeof flag === "string" && flag.trim() === "")
    throw new CliError(
      "--webhook-secret is empty: give the secret, or leave the flag out (the delivery then goes unsigned)",
    );
  const variable = process.env.RUNLET_WEBHOOK_SECRET;
  const secret = typeof flag === "string" ? flag : variable?.trim() ? variable : undefined;
  // The run API's limit (characters, spaces around aside): said in its words, it named
  // X-Webhook-Secret, a header the command line never wrote.
  const length = secret?.trim().length ?? 0;
  if (length > MAX_WEBHOOK_SECRET_LENGTH)
    throw new CliError(
      `${typeof flag === "string" ? "--webhook-secret" : "RUNLET_WEBHOOK_SECRET"} is longer than the run API's ${MAX_WEBHOOK_SECRET_LENGTH} characters (${length})`,
    );
  return secret;
}

/**
 * `--webhook`'s URL, refused before anything is sent unless it is an absolute http(s) URL, as the
 * run API takes it: `--webhook hooks.example.com/x` said the delivery would go unsigned, then
 * printed the run API's 400 (`webhookEndpoint must be …`, a name the command line never used).
 */
export function webhookUrl(flag: unknown): string | undefined {
  if (typeof flag !== "string") return undefined;
  const url = parseHttpUrl(flag);
  if (!url)
    throw new CliError(
      `--webhook must be an absolute http(s) URL, such as https://example.com/hook (got '${flag}')`,
    );
  // The run API's other refusals of a URL, in the command line's words: they came back as
  // "webhookEndpoint must not contain credentials …; use X-Webhook-Secret …", after the note.
  if (url.username || url.password)
    throw new CliError(
      "--webhook must not hold credentials (user:password@): sign its deliveries with --webhook-secret instead",
    );
  if (url.port === "0")
    throw new CliError(`--webhook has port 0, which no receiver can listen on (got '${flag}')`);
  return flag;
}
