/**
 * `PUT /internal/apps/{project}/{app}`: stores a version of an app and makes it current (a host
 * on its own; a host in a registry fetches versions itself).
 * `PUT /internal/apps/{project}/{app}/current` `{version, digest, warm?}`: the control plane says
 * which version is current; the host fetches it now if it runs the app or is to warm it, else at
 * the app's next call (app-versions.ts).
 * `DELETE /internal/apps/{project}/{app}`: the app's replicas stop and its files go (204, also
 * when it was not there); with `X-Runlet-App-Id`, only if no later app of the name is known.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { describeZodError } from "../../common/app-config.ts";
import { deployRequestSchema } from "../../common/protocol/deploy.ts";
import { currentVersionSchema } from "../../common/protocol/hosts.ts";
import type { HostContext } from "../context.ts";
import { parseJsonBody, readBody } from "../http/body.ts";
import { HttpError } from "../http/errors.ts";
import { acceptedForOf, projectAndApp } from "../http/params.ts";
import { sendJson } from "../http/respond.ts";
import { MAX_DEPLOY_BODY_BYTES } from "../limits.ts";

export async function deployApp(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { registry, pool }: HostContext,
): Promise<void> {
  const { project, app } = projectAndApp(params);
  const parsed = deployRequestSchema.safeParse(
    parseJsonBody(await readBody(req, MAX_DEPLOY_BODY_BYTES)),
  );
  if (!parsed.success) throw new HttpError(400, describeZodError(parsed.error));
  const { version, config, files } = parsed.data;
  if (config.name !== app) {
    throw new HttpError(400, `config.name: '${config.name}' does not match the app '${app}'`);
  }
  const deployment = await registry.deploy({ project, app, version, config, files });
  pool.deployed(deployment);
  sendJson(res, 200, { project, app, version });
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
