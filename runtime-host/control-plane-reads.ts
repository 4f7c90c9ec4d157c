/**
 * What a joined host reads from the control plane with its host token: an app's current
 * version, a version's bundle (docs/hosts.md: a host fetches an app's code when it first needs
 * it), and the project's secrets for a new replica's environment. A read that cannot be had now
 * is the caller's 502, saying why.
 */
import { type DeployRequest, deployRequestSchema } from "../common/protocol/deploy.ts";
import {
  type CurrentVersion,
  currentVersionSchema,
  projectSecretsSchema,
} from "../common/protocol/hosts.ts";
import { controlPlanePath } from "../common/protocol/paths.ts";
import type { BundleSource } from "./app-versions.ts";
import { HttpError } from "./http/errors.ts";
import { timeoutOr } from "./timeout-signal.ts";

export class ControlPlaneReads implements BundleSource {
  constructor(
    private readonly controlPlaneUrl: string,
    /** Read at each request (a token file may be replaced meanwhile). */
    private readonly hostToken: () => string,
    /** The host stopped: reads under way end. */
    private readonly stopped: AbortSignal,
  ) {}

  async current(project: string, app: string): Promise<CurrentVersion | undefined> {
    const res = await this.#get(controlPlanePath.current(project, app));
    if (res.status === 404) return undefined;
    const parsed = currentVersionSchema.safeParse(await res.json().catch(() => undefined));
    if (!res.ok || !parsed.success) throw unavailable(`the control plane answered ${res.status}`);
    return parsed.data;
  }

  /** The project's secrets, as its apps' environment, and their revision. */
  async secrets(project: string) {
    const res = await this.#get(controlPlanePath.secrets(project));
    const parsed = projectSecretsSchema.safeParse(await res.json().catch(() => undefined));
    if (!res.ok || !parsed.success)
      throw unavailable(`the control plane answered ${res.status} for the project's secrets`);
    return parsed.data;
  }

  async bundle(project: string, app: string, version: number): Promise<DeployRequest | undefined> {
    const res = await this.#get(controlPlanePath.bundle(project, app, version), 60_000);
    if (res.status === 404) return undefined;
    const parsed = deployRequestSchema.safeParse(await res.json().catch(() => undefined));
    if (!res.ok || !parsed.success) throw unavailable(`the control plane answered ${res.status}`);
    return parsed.data;
  }

  async #get(path: string, timeoutMs = 10_000): Promise<Response> {
    try {
      return await fetch(this.controlPlaneUrl + path, {
        headers: { authorization: `Bearer ${this.hostToken()}` },
        signal: timeoutOr(timeoutMs, this.stopped),
      });
    } catch {
      throw unavailable("the control plane is not reachable to fetch the app");
    }
  }
}

/** The app's version cannot be had now: the caller's 502 says why. */
const unavailable = (why: string) => new HttpError(502, why);
