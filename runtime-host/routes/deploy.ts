/**
 * `PUT /internal/apps/{project}/{app}`: stores a version of an app and makes it current.
 * `DELETE` on it: the app's replicas stop and its files go (204, also when it was not there).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { describeZodError } from "../../common/app-config.ts";
import { deployRequestSchema } from "../../common/protocol/deploy.ts";
import type { HostContext } from "../context.ts";
import { parseJsonBody, readBody } from "../http/body.ts";
import { HttpError } from "../http/errors.ts";
import { projectAndApp } from "../http/params.ts";
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

export async function removeApp(
  _req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { registry, pool }: HostContext,
): Promise<void> {
  const { project, app } = projectAndApp(params);
  await registry.remove(project, app);
  pool.removed(project, app);
  res.writeHead(204).end();
}
