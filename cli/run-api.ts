/**
 * The run API (`{api_url}/v4/...`) for the CLI's commands, through `runlet/client`: the client of
 * the configured project, a run's app (from the runs index), and a client error as the one line
 * a command prints.
 */
import { createClient, type RunletClient, RunletError } from "runlet/client";
import { timeOfId } from "../common/ids.ts";
import { CliError } from "./command.ts";
import { type CliConfig, callProject } from "./config.ts";

export function runApi(config: CliConfig): RunletClient {
  return createClient({ apiUrl: config.apiUrl, project: config.projectId, token: config.token });
}

/** The app of a run, which its URL on the Worker names: the runs index knows it. */
export async function appOfRun(config: CliConfig, runId: string): Promise<string> {
  for (;;) {
    try {
      const { app } = await callProject<{ app: string }>(
        config,
        "GET",
        `/runs/${encodeURIComponent(runId)}`,
        `looking up ${runId}`,
      );
      return app;
    } catch (err) {
      if (!notIndexedYet(err, runId)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
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
 * What a command says of a failed call of the run API (`what`: "status", "cancel", ...): that
 * Runlet cannot be reached, or the Worker's message. Anything else than a RunletError is thrown
 * as it is.
 */
export function cliErrorOf(err: unknown, what: string, config: CliConfig): unknown {
  if (!(err instanceof RunletError)) return err;
  if (err.code === "network_error") return unreachable(what, config);
  // `waitFor` past its time: the client's own words (the run has not ended, and goes on).
  if (err.code === "timeout") return new CliError(`${err.message}: it goes on`);
  return new CliError(answeredMessage(err) ?? `the worker answered ${err.status}`, {
    status: err.status,
    code: err.code,
  });
}

export function unreachable(what: string, config: CliConfig): CliError {
  return new CliError(
    `${what} failed: cannot reach ${new URL(config.apiUrl).origin} — is Runlet running (\`npm start\`)?`,
  );
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
  if (typeof flag === "string") return flag;
  return process.env.RUNLET_WEBHOOK_SECRET || undefined;
}
