/**
 * `PUT /internal/projects/{project}/secrets` `{revision}`: the control plane changed the project's
 * secrets (docs/hosts.md): the replicas of its apps that read an earlier revision are replaced,
 * as a redeploy replaces an old version's, before the answer (204) goes. A host that missed it
 * hears the revision in its next heartbeat's answer.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { describeZodError } from "../../common/app-config.ts";
import { secretsRevisionSchema } from "../../common/protocol/hosts.ts";
import type { HostContext } from "../context.ts";
import { parseJsonBody, readBody } from "../http/body.ts";
import { HttpError } from "../http/errors.ts";
import { nameOf } from "../http/params.ts";

export async function secretsChanged(
  req: IncomingMessage,
  res: ServerResponse,
  [given]: readonly string[],
  { pool }: HostContext,
): Promise<void> {
  const project = nameOf("project", given);
  const parsed = secretsRevisionSchema.safeParse(parseJsonBody(await readBody(req, 1_024)));
  if (!parsed.success) throw new HttpError(400, describeZodError(parsed.error));
  pool.secretsChanged(project, parsed.data.revision);
  res.writeHead(204).end();
}
