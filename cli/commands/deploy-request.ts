/**
 * A deploy's request as `runlet deploy` and `runlet apps rollback` send it: a POST whose answer
 * comes once a replica of the new version started on a runtime host, which an app's
 * `start_timeout` allows to take up to 30 minutes (`patientFetch`), with a "still waiting" note
 * on stderr every so often (`request`), and what its answer says of that start.
 */
import type { DeployedApp } from "../../control-plane/routes/apps-deploy.ts";
import { baseUrlSource, type CliConfig, readAnswer, request } from "../config.ts";
import { patientFetch } from "../patient-fetch.ts";

/**
 * POSTs `body` (none: an empty request) to `path`, below `/v2/projects/{id}`, with
 * `?startCheck=false` unless `startCheck`; the version deployed, or the refusal as a CliError
 * saying `what` failed.
 */
export async function sendDeploy(
  config: CliConfig,
  path: string,
  opts: { body?: unknown; startCheck: boolean; what: string },
): Promise<DeployedApp> {
  const headers: Record<string, string> = { authorization: `Bearer ${config.token}` };
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await request(
    `${config.baseUrl}/v2/projects/${config.projectId}${path}${opts.startCheck ? "" : "?startCheck=false"}`,
    {
      method: "POST",
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    },
    opts.what,
    patientFetch,
    // The control plane answers once the replica has started: a wait of minutes is that start
    // (a start_timeout of minutes), and "still waiting for http://127.0.0.1:8080" read as
    // Runlet not answering.
    opts.startCheck
      ? `the version's replica to start on a runtime host (the control plane answers once it has)`
      : undefined,
  );
  // patientFetch's Response was made by hand: it has no url of its own.
  return readAnswer<DeployedApp>(res, opts.what, baseUrlSource(), config.baseUrl);
}

/** Where and how fast the new version's replica started, or that it was not started first. */
export function startedNote(app: DeployedApp): string {
  return app.started
    ? `Its replica started in ${app.started.ms} ms (runtime host ${app.started.host}) and takes its first call.`
    : `Not started first (--no-start-check): if v${app.version} cannot start, its calls fail until the next deploy.`;
}
