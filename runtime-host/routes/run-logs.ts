/**
 * `GET /internal/runs/{runId}/logs[?project=P][&after=N]`: what a run of a managed app wrote while
 * it ran, `{runId, lines: [{time, stream, text, seq}], truncated}` (whole lines past `after` only). With `project`, a run of another project
 * is as unknown as a run never seen (the control plane passes the project it checked). A run of
 * before the host's restart is read from its file (pool/run-log-files.ts).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RunLogs } from "../../common/protocol/host.ts";
import type { HostContext } from "../context.ts";
import { HttpError } from "../http/errors.ts";
import { sendJson } from "../http/respond.ts";
import { RUN_LOG_LIMITS } from "../limits.ts";

export async function getRunLogs(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  ctx: HostContext,
): Promise<void> {
  const runId = params[0] ?? "";
  const query = new URL(req.url ?? "/", "http://host").searchParams;
  const project = query.get("project");
  const after = query.get("after") ?? "0";
  if (!/^\d{1,15}$/.test(after))
    throw new HttpError(400, `after must be a line number (a whole number), not '${after}'`);
  const kept = await ctx.runLogs.read(runId, Number(after));
  if (!kept || (project !== null && kept.project !== project)) {
    throw new HttpError(
      404,
      `no logs of run '${runId}' on this runtime host: it keeps those of its latest ${RUN_LOG_LIMITS.runs} runs of managed-runtime apps only (at most ${RUN_LOG_LIMITS.diskBytes / 2 ** 20} MiB, on its disk, across its restarts)`,
    );
  }
  const body: RunLogs = { runId: kept.runId, lines: kept.lines, truncated: kept.truncated };
  sendJson(res, 200, body);
}
