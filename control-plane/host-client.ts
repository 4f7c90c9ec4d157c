import type { DeployRequest } from "../common/protocol/deploy.ts";
import { hostMetricsSchema, type RunLogs, runLogsSchema } from "../common/protocol/host.ts";
import { hostPath } from "../common/protocol/paths.ts";
import { ApiError } from "./errors.ts";

/** The control plane's side of the runtime host's internal API. */
export interface RuntimeHost {
  deploy(input: DeployRequest & { project: string; app: string }): Promise<void>;
  /** Stops the app's replicas and deletes its files; harmless if the host never had it. */
  remove(input: { project: string; app: string }): Promise<void>;
  /** What a run of `project` wrote, as the host keeps it; undefined if it keeps none. */
  runLogs(input: { project: string; runId: string }): Promise<RunLogs | undefined>;
  /** The app's replicas now and the calls waiting for one; undefined if the host is unreachable. */
  replicas(input: { project: string; app: string }): Promise<ReplicaCounts | undefined>;
}

export interface ReplicaCounts {
  starting: number;
  idle: number;
  busy: number;
  /** Calls waiting for a slot. */
  queued: number;
}

export function httpRuntimeHost(baseUrl: string, internalToken: string): RuntimeHost {
  /** One request of the host's internal API; 502 when the host cannot be reached in time. */
  async function send(
    method: string,
    path: string,
    timeoutMs: number,
    json?: unknown,
  ): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${internalToken}` };
    if (json !== undefined) headers["content-type"] = "application/json";
    try {
      return await fetch(`${baseUrl}${path}`, {
        method,
        headers,
        body: json === undefined ? undefined : JSON.stringify(json),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch {
      throw new ApiError("bad_gateway", "the runtime host is not reachable; is it running?");
    }
  }

  return {
    async deploy({ project, app, version, config, files }) {
      const res = await send("PUT", hostPath.app(project, app), 60_000, {
        version,
        config,
        files,
      } satisfies DeployRequest);
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { message?: string };
        throw new ApiError(
          res.status === 400 ? "bad_request" : "bad_gateway",
          `the runtime host refused the deploy: ${body.message ?? `status ${res.status}`}`,
        );
      }
    },
    async remove({ project, app }) {
      const res = await send("DELETE", hostPath.app(project, app), 30_000);
      if (!res.ok) {
        throw new ApiError(
          "bad_gateway",
          `the runtime host could not delete the app (${res.status})`,
        );
      }
    },
    async runLogs({ project, runId }) {
      const res = await send("GET", hostPath.runLogs(runId, project), 10_000);
      const body: unknown = await res.json().catch(() => undefined);
      if (res.status === 404) return undefined;
      const logs = res.ok ? runLogsSchema.safeParse(body) : undefined;
      if (!logs?.success) {
        const message = (body as { message?: unknown } | undefined)?.message;
        throw new ApiError(
          "bad_gateway",
          `the runtime host could not answer with the run's logs: ${
            typeof message === "string" ? message : `status ${res.status}`
          }`,
        );
      }
      return logs.data;
    },
    async replicas({ project, app }) {
      let res: Response;
      try {
        res = await send("GET", hostPath.metrics, 2_000);
      } catch {
        return undefined;
      }
      if (!res.ok) return undefined;
      const parsed = hostMetricsSchema.safeParse(await res.json().catch(() => undefined));
      if (!parsed.success) return undefined;
      const metrics = parsed.data;
      const counts = { starting: 0, idle: 0, busy: 0, queued: 0 };
      const found = metrics.apps.find((a) => a.project === project && a.app === app);
      if (!found) return counts;
      counts.queued = found.queued;
      for (const r of found.replicas) {
        if (!r.ready) counts.starting++;
        else if (r.active === 0) counts.idle++;
        else counts.busy++;
      }
      return counts;
    },
  };
}
