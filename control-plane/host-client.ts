import type { AppConfig, BundleFile } from "../common/app-config.ts";
import { ApiError } from "./errors.ts";
import { type RunLogs, runLogsSchema } from "./runs/logs.ts";

/** The control plane's side of the runtime host's internal API. */
export interface RuntimeHost {
  deploy(input: {
    project: string;
    app: string;
    version: number;
    config: AppConfig;
    files: BundleFile[];
  }): Promise<void>;
  /** Stops the app's replicas and deletes its files; harmless if the host never had it. */
  remove(input: { project: string; app: string }): Promise<void>;
  /** What a run of `project` wrote, as the host keeps it; undefined if it keeps none. */
  runLogs(input: { project: string; runId: string }): Promise<RunLogs | undefined>;
}

const unreachable = () =>
  new ApiError("bad_gateway", "the runtime host is not reachable; is it running?");

export function httpRuntimeHost(baseUrl: string, internalToken: string): RuntimeHost {
  return {
    async deploy({ project, app, version, config, files }) {
      let res: Response;
      try {
        res = await fetch(`${baseUrl}/internal/apps/${project}/${app}`, {
          method: "PUT",
          headers: { authorization: `Bearer ${internalToken}`, "content-type": "application/json" },
          body: JSON.stringify({ version, config, files }),
          signal: AbortSignal.timeout(60_000),
        });
      } catch {
        throw unreachable();
      }
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { message?: string };
        throw new ApiError(
          res.status === 400 ? "bad_request" : "bad_gateway",
          `the runtime host refused the deploy: ${body.message ?? `status ${res.status}`}`,
        );
      }
    },
    async remove({ project, app }) {
      let res: Response;
      try {
        res = await fetch(`${baseUrl}/internal/apps/${project}/${app}`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${internalToken}` },
          signal: AbortSignal.timeout(30_000),
        });
      } catch {
        throw unreachable();
      }
      if (!res.ok) {
        throw new ApiError(
          "bad_gateway",
          `the runtime host could not delete the app (${res.status})`,
        );
      }
    },
    async runLogs({ project, runId }) {
      const query = new URLSearchParams({ project });
      let res: Response;
      let body: unknown;
      try {
        res = await fetch(`${baseUrl}/internal/runs/${encodeURIComponent(runId)}/logs?${query}`, {
          headers: { authorization: `Bearer ${internalToken}` },
          signal: AbortSignal.timeout(10_000),
        });
        body = await res.json().catch(() => undefined);
      } catch {
        throw unreachable();
      }
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
  };
}
