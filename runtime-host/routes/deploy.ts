/**
 * `PUT /internal/apps/{project}/{app}`: stores a version of an app and makes it current (a host
 * on its own; a host in a registry fetches versions itself).
 * `POST /internal/apps/{project}/{app}/trial` `{version, digest, config, files}`: a deploy's trial
 * (pool/trials.ts): the version's files are kept beside the current one, and a replica of it
 * started; 200 as soon as the files are kept, its body once the replica is ready or failed.
 * `PUT /internal/apps/{project}/{app}/current` `{version, digest, warm?}`: the control plane says
 * which version is current; the host fetches it now if it runs the app or is to warm it, else at
 * the app's next call (app-versions.ts).
 * `DELETE /internal/apps/{project}/{app}`: the app's replicas stop and its files go (204, also
 * when it was not there); with `X-Runlet-App-Id`, only if no later app of the name is known.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import { describeZodError } from "../../common/app-config.ts";
import {
  deployRequestSchema,
  type TrialAnswer,
  trialRequestSchema,
} from "../../common/protocol/deploy.ts";
import { currentVersionSchema } from "../../common/protocol/hosts.ts";
import type { HostContext } from "../context.ts";
import { parseJsonBody, readBody } from "../http/body.ts";
import { HttpError } from "../http/errors.ts";
import { acceptedForOf, projectAndApp } from "../http/params.ts";
import { sendJson } from "../http/respond.ts";
import { MAX_DEPLOY_BODY_BYTES } from "../limits.ts";

/** The version a deploy or a trial brings, of the path's app: 400 for anything else. */
async function versionOf<S extends typeof deployRequestSchema | typeof trialRequestSchema>(
  req: IncomingMessage,
  app: string,
  schema: S,
): Promise<z.infer<S>> {
  const parsed = schema.safeParse(parseJsonBody(await readBody(req, MAX_DEPLOY_BODY_BYTES)));
  if (!parsed.success) throw new HttpError(400, describeZodError(parsed.error));
  const { name } = parsed.data.config;
  if (name !== app)
    throw new HttpError(400, `config.name: '${name}' does not match the app '${app}'`);
  return parsed.data as z.infer<S>;
}

export async function deployApp(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { registry, pool, trials }: HostContext,
): Promise<void> {
  const { project, app } = projectAndApp(params);
  const { version, config, files } = await versionOf(req, app, deployRequestSchema);
  const deployment = await registry.deploy({ project, app, version, config, files });
  pool.deployed(deployment);
  trials.drop(project, app, version); // replaced before any call took them
  sendJson(res, 200, { project, app, version });
}

export async function startTrial(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { registry, trials, limits }: HostContext,
): Promise<void> {
  const { project, app } = projectAndApp(params);
  const { version, config, files, digest } = await versionOf(req, app, trialRequestSchema);
  // Files it cannot write (a full disk) are the host's failure: the control plane asks another.
  const target = await registry
    .stage({ project, app, version, config, files, digest })
    .catch((err: unknown) => {
      if (err instanceof HttpError) throw err;
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      console.error(`runtime host: cannot write ${project}/${app} version ${version}: ${err}`);
      throw new HttpError(500, `the runtime host cannot write the version's files (${why})`);
    });
  // The head now: the control plane knows this host took the version, and waits for the start
  // (bounded by the start limit here) rather than taking a slow start for a host gone silent.
  res.writeHead(200, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
  });
  res.flushHeaders();
  // A space now and then while the replica starts (JSON before its value may hold them): a
  // client's wait for the next bytes of an answer (Node's fetch: 300 s) must not end a start
  // that the app's start_timeout allows to take up to 30 minutes.
  const alive = setInterval(() => res.write(" "), limits.trialKeepAliveMs);
  try {
    const answer: TrialAnswer = await trials.start(target).catch(async (err: unknown) => {
      await registry.unstage(target);
      throw err;
    });
    if (!answer.started) await registry.unstage(target);
    res.end(JSON.stringify(answer));
  } finally {
    clearInterval(alive);
  }
}

export async function setCurrentVersion(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { versions }: HostContext,
): Promise<void> {
  const { project, app } = projectAndApp(params);
  const parsed = currentVersionSchema.safeParse(parseJsonBody(await readBody(req, 4_096)));
  if (!parsed.success) throw new HttpError(400, describeZodError(parsed.error));
  versions.setCurrent(project, app, parsed.data);
  res.writeHead(204).end();
}

export async function removeApp(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { versions }: HostContext,
): Promise<void> {
  const { project, app } = projectAndApp(params);
  await versions.deleted(project, app, acceptedForOf(req));
  res.writeHead(204).end();
}
