import type { AppConfig, BundleFile } from "../common/app-config.ts";
import { ApiError } from "./errors.ts";

/** The control plane's side of the runtime host's internal API. */
export interface RuntimeHost {
  deploy(input: {
    project: string;
    app: string;
    version: number;
    config: AppConfig;
    files: BundleFile[];
  }): Promise<void>;
}

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
        throw new ApiError("bad_gateway", "the runtime host is not reachable; is it running?");
      }
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { message?: string };
        throw new ApiError(
          res.status === 400 ? "bad_request" : "bad_gateway",
          `the runtime host refused the deploy: ${body.message ?? `status ${res.status}`}`,
        );
      }
    },
  };
}
