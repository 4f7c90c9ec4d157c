/**
 * The control plane's side of the runtime hosts' internal API, over every host in the registry
 * that is not down (docs/hosts.md). Deploys are not pushed: a host fetches a version's bundle
 * when it first needs it (bundles.ts).
 */

import { HEADER } from "../common/consts.ts";
import type { DeployRequest } from "../common/protocol/deploy.ts";
import {
  type AppOutput,
  appLoad,
  hostMetricsSchema,
  type RunLogs,
  replicaOutputSchema,
  runLogsSchema,
} from "../common/protocol/host.ts";
import type { CurrentVersion } from "../common/protocol/hosts.ts";
import { hostPath } from "../common/protocol/paths.ts";
import { rendezvousOrder } from "../common/rendezvous.ts";
import { ApiError } from "./errors.ts";
import type { LiveHost } from "./hosts/registry.ts";
import { type StartOutcome, startOnHost } from "./hosts/start.ts";

export interface RuntimeHosts {
  /**
   * A deploy's trial: one host that is up starts a replica of the version, before it is
   * recorded (hosts/start.ts). Resolves with how it went; never throws for a host's failure.
   */
  start(input: {
    project: string;
    app: string;
    digest: string;
    bundle: DeployRequest;
  }): Promise<StartOutcome>;
  /**
   * Tells every host that answers that the app's current version is this one. A host that runs
   * the app fetches it now, and so does the app's first host in its rendezvous order (the
   * Worker's placement sends it the app's first calls) when `warm`, to start its
   * `min_replicas`; the others fetch it at their next call of the app. A host that does not
   * answer learns it at its next heartbeat. `startedOn`: the host where the deploy's trial
   * started a replica, which warms the app first (that replica is its first).
   */
  announce(
    input: {
      project: string;
      app: string;
      appId: string;
      warm: boolean;
      startedOn?: string;
    } & CurrentVersion,
  ): Promise<void>;
  /**
   * Stops the app's replicas and deletes its files on every host that answers; a host that
   * does not is told at its next heartbeat (the app is gone from the database by then).
   * `appId` names the app deleted: a host that already heard of a later app of its name (its
   * deploy's news came first) keeps that one.
   */
  remove(input: { project: string; app: string; appId?: string }): Promise<void>;
  /**
   * The project's secrets changed, now at `revision`: every host that answers within 2 s has
   * replaced the replicas that read them before when this resolves; one that does not hears it
   * at its next heartbeat.
   */
  secretsChanged(input: { project: string; revision: number }): Promise<void>;
  /** What a run of `project` wrote, from the host that keeps it; undefined if none does. */
  runLogs(input: { project: string; runId: string; after?: number }): Promise<RunLogs | undefined>;
  /** The app's replicas now over all hosts; undefined if no host could be asked. */
  replicas(input: { project: string; app: string }): Promise<ReplicasNow | undefined>;
  /** Everything the app's replicas wrote, on every host that answers; the newest first. */
  output(input: { project: string; app: string }): Promise<AppOutput>;
}

export interface ReplicaCounts {
  starting: number;
  idle: number;
  busy: number;
  /** Calls waiting for a slot. */
  queued: number;
}

/** The counts, and each host that answered with its part: replicas, and calls they are busy with. */
export interface ReplicasNow extends ReplicaCounts {
  byHost: Map<string, { replicas: number; busy: number }>;
}

/**
 * How long a change of secrets waits for each host to hear it: a host that does not answer in
 * time (stalled, slow) hears it at its next heartbeat, within 2 s.
 */
const SECRETS_TOLD_MS = 2_000;

/** `live`: the hosts to ask now (the registry's that are not down). */
export function httpRuntimeHosts(
  live: () => Promise<LiveHost[]>,
  internalToken: string,
): RuntimeHosts {
  const addresses = async () => (await live()).map((h) => h.address);

  /** One request of a host's internal API; undefined when the host cannot be reached in time. */
  async function send(
    base: string,
    method: string,
    path: string,
    timeoutMs: number,
    json?: unknown,
    more: Record<string, string> = {},
  ) {
    const headers: Record<string, string> = { ...more, authorization: `Bearer ${internalToken}` };
    if (json !== undefined) headers["content-type"] = "application/json";
    try {
      return await fetch(base + path, {
        method,
        headers,
        body: json === undefined ? undefined : JSON.stringify(json),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch {
      return undefined;
    }
  }

  return {
    async announce({ project, app, appId, version, digest, warm, startedOn }) {
      const hosts = await live();
      const up = hosts.filter((h) => h.state === "up");
      const warmers = warm
        ? [
            ...up.filter((h) => h.id === startedOn),
            ...rendezvousOrder(`${project}/${app}`, up).filter((h) => h.id !== startedOn),
          ]
        : [];
      const tell = async (host: LiveHost, current: CurrentVersion) => {
        const path = hostPath.current(project, app);
        const res = await send(host.address, "PUT", path, 10_000, current);
        await res?.body?.cancel();
        return res?.ok === true;
      };
      const told = await Promise.all(
        hosts.map((host) => tell(host, { version, digest, appId, warm: host === warmers[0] })),
      );
      // The first may have gone without the registry knowing yet: the next one warms the app.
      if (warmers[0] && !told[hosts.indexOf(warmers[0])])
        for (const next of warmers.slice(1))
          if (await tell(next, { version, digest, appId, warm })) break;
    },
    start: async (input) => startOnHost(await live(), internalToken, input),
    async secretsChanged({ project, revision }) {
      await Promise.all(
        (await addresses()).map(async (base) => {
          const path = hostPath.secrets(project);
          const res = await send(base, "PUT", path, SECRETS_TOLD_MS, { revision });
          await res?.body?.cancel();
        }),
      );
    },
    async remove({ project, app, appId }) {
      const named: Record<string, string> = appId ? { [HEADER.appId]: appId } : {};
      await Promise.all(
        (await addresses()).map(async (base) => {
          const res = await send(
            base,
            "DELETE",
            hostPath.app(project, app),
            30_000,
            undefined,
            named,
          );
          await res?.body?.cancel();
        }),
      );
    },
    async runLogs({ project, runId, after }) {
      let failure: string | undefined;
      /** One host's logs of the run; undefined if it has none (its failure noted). */
      const ask = async (base: string): Promise<RunLogs | undefined> => {
        const res = await send(base, "GET", hostPath.runLogs(runId, project, after), 10_000);
        if (!res) {
          failure = "a runtime host is not reachable";
          return undefined;
        }
        const body: unknown = await res.json().catch(() => undefined);
        if (res.status === 404) return undefined;
        const logs = res.ok ? runLogsSchema.safeParse(body) : undefined;
        if (logs?.success) return logs.data;
        const message = (body as { message?: unknown } | undefined)?.message;
        failure = typeof message === "string" ? message : `status ${res.status}`;
        return undefined;
      };
      // Every host at once, the first with the logs answering: asked one after another, a host
      // on a stalled link held the answer 10 s (each such host), though another had the logs.
      const bases = await addresses();
      const found = await new Promise<RunLogs | undefined>((resolve) => {
        let left = bases.length;
        if (left === 0) resolve(undefined);
        for (const base of bases)
          void ask(base).then((logs) => {
            if (logs) resolve(logs);
            if (--left === 0) resolve(undefined);
          });
      });
      if (found) return found;
      if (failure)
        throw new ApiError(
          "bad_gateway",
          `the runtime hosts could not answer with the run's logs: ${failure}`,
        );
      return undefined;
    },
    async replicas({ project, app }) {
      const counts = { starting: 0, idle: 0, busy: 0, queued: 0 };
      const byHost: ReplicasNow["byHost"] = new Map();
      // Every host at once: asked in turn, each host on a stalled link cost its 2 s.
      const answers = await Promise.all(
        (await live()).map(async ({ id, address }) => {
          const res = await send(address, "GET", hostPath.metrics, 2_000);
          const parsed = hostMetricsSchema.safeParse(await res?.json().catch(() => undefined));
          return { id, metrics: res?.ok && parsed.success ? parsed.data : undefined };
        }),
      );
      for (const { id, metrics } of answers) {
        if (!metrics) continue;
        const found = metrics.apps.find((a) => a.project === project && a.app === app);
        const held = found?.held ?? 0; // a deploy's, for the first call: ready and idle
        const load = found ? appLoad(found) : { replicas: 0, busy: 0 };
        byHost.set(id, { ...load, replicas: load.replicas + held });
        if (!found) continue;
        counts.queued += found.queued;
        counts.idle += held;
        for (const r of found.replicas) {
          if (!r.ready) counts.starting++;
          else if (r.active === 0) counts.idle++;
          else counts.busy++;
        }
      }
      return byHost.size > 0 ? { ...counts, byHost } : undefined;
    },
    async output({ project, app }) {
      const answers = await Promise.all(
        (await live()).map(async (host) => {
          const res = await send(host.address, "GET", hostPath.output(project, app), 5_000);
          const parsed = replicaOutputSchema.safeParse(await res?.json().catch(() => undefined));
          return res?.ok && parsed.success
            ? parsed.data.replicas.map((r) => ({ ...r, host: host.id }))
            : undefined;
        }),
      );
      const replicas = answers.flatMap((a) => a ?? []);
      replicas.sort((a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt));
      return { replicas, unreachable: answers.filter((a) => a === undefined).length };
    },
  };
}
