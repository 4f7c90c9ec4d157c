/**
 * The messages of many runtime hosts (docs/hosts.md): a host's registration and heartbeats to
 * the control plane, its request for one more replica of an app, and the hosts the Worker
 * places work on. zod/mini: the Worker bundles this file.
 */
import * as z from "zod/mini";

/** What a host says of itself in its heartbeats; a host silent for `DOWN_AFTER_MS` is `down`. */
export const HOST_STATES = ["up", "draining"] as const;
/**
 * What the registry keeps of a host: what it last said; `drained` once an operator drained it (no
 * new work, its replicas retired, until resumed or it stops gracefully); `stopped` once it said it
 * left (a graceful stop: `POST /internal/hosts/{id}/leave`, its work ended, its replicas stopped).
 */
export const REGISTRY_STATES = [...HOST_STATES, "drained", "stopped"] as const;
/** A host's state as the operator sees it (`GET /v2/hosts`). */
export type HostState = (typeof REGISTRY_STATES)[number] | "down";

/** A host token names itself: `rlh_` and 43 characters (only its hash is kept). */
export const HOST_TOKEN_PREFIX = "rlh_";

/** The name of the host token `runlet start` makes for the hosts it runs itself (reserved). */
export const LOCAL_HOST_TOKEN = "local";

/** Between two heartbeats of a host. */
export const HEARTBEAT_MS = 2_000;
/** A host whose last heartbeat is older than this is down. */
export const DOWN_AFTER_MS = 15_000;

const count = () => z.number().check(z.int(), z.nonnegative());
const name = () => z.string().check(z.minLength(1), z.maxLength(64));

/** `POST {control plane}/internal/hosts`, with the host token. */
export const registrationSchema = z.strictObject({
  name: name(),
  /** The URL the Worker reaches the host at (http or https, no path). */
  address: z.url({ protocol: /^https?$/ }),
  /** Replicas it runs at once. */
  slots: z.number().check(z.int(), z.minimum(1), z.maximum(100_000)),
  memoryMb: count(),
});
export type Registration = z.infer<typeof registrationSchema>;

/** The answer: its id, the token the Worker calls it with (and it calls back the Worker with). */
export const registeredSchema = z.object({
  hostId: z.string(),
  internalToken: z.string(),
  heartbeatMs: z.number(),
});
export type Registered = z.infer<typeof registeredSchema>;

/** What a host runs of one app. */
export const hostAppSchema = z.strictObject({
  project: name(),
  app: name(),
  version: z.number().check(z.int(), z.positive()),
  /** Its replicas, starting ones included, and replicas it asked for and was not yet answered. */
  replicas: count(),
  ready: count(),
  /** Calls running on them. */
  busy: count(),
});
export type HostApp = z.infer<typeof hostAppSchema>;

/** `POST {control plane}/internal/hosts/{id}/heartbeat`, with the host token. */
export const heartbeatSchema = z.strictObject({
  state: z.enum(HOST_STATES),
  /** Calls running, and calls waiting for a slot, over all its apps. */
  busy: count(),
  queued: count(),
  apps: z.array(hostAppSchema).check(z.maxLength(100_000)),
});
export type Heartbeat = z.infer<typeof heartbeatSchema>;

/** An app's current version, as the control plane says it (`digest`: null for old versions). */
export const currentVersionSchema = z.object({
  version: z.number().check(z.int(), z.positive()),
  digest: z.nullable(z.string()),
  /** The host is the one to start the app's `min_replicas` now (control-plane/host-client.ts). */
  warm: z.optional(z.boolean()),
  /**
   * The app's id: sortable by time, so a later app of the same name (deleted and deployed
   * again, its versions from 1 again) is told from an earlier one's late news.
   */
  appId: z.optional(z.string()),
});
export type CurrentVersion = z.infer<typeof currentVersionSchema>;

/**
 * A project's secrets, decrypted, as its replicas' environment (`GET /internal/secrets/…`), and
 * the project's secrets revision they are (absent: an older control plane).
 */
export const projectSecretsSchema = z.object({
  env: z.record(z.string(), z.string()),
  revision: z.optional(count()),
});
export type ProjectSecrets = z.infer<typeof projectSecretsSchema>;

/** A change of a project's secrets, told to every host (`PUT {host}/internal/projects/…/secrets`). */
export const secretsRevisionSchema = z.strictObject({ revision: count() });
export type SecretsRevision = z.infer<typeof secretsRevisionSchema>;

/**
 * The answer: the apps the host runs that no longer exist (deleted: it stops them), and the
 * current version of each it still runs (a version it missed at deploy: it fetches it).
 */
export const heartbeatAnswerSchema = z.object({
  gone: z.array(z.object({ project: z.string(), app: z.string() })),
  current: z.array(
    z.extend(currentVersionSchema, {
      project: z.string(),
      app: z.string(),
      /**
       * How many replicas of the app the host may keep: its `max_replicas` less those of the
       * hosts up since before this one (docs/hosts.md, "Replicas over all hosts"). A host with
       * more retires the rest. Absent (an older control plane): no limit but the grants'.
       */
      keep: z.optional(count()),
    }),
  ),
  /**
   * The secrets revision of each project the host runs apps of: raised by every change of its
   * secrets. The host replaces the replicas started with an earlier one (docs/api.md, "Secrets").
   * Absent: an older control plane.
   */
  secrets: z.optional(z.array(z.object({ project: z.string(), revision: count() }))),
  /**
   * Set while the control plane cannot write heartbeats (its disk is full): it says so, and
   * keeps this one in its memory, so the host stays up in the registry (docs/hosts.md).
   */
  degraded: z.optional(z.string()),
});
export type HeartbeatAnswer = z.infer<typeof heartbeatAnswerSchema>;

/**
 * `POST {control plane}/internal/hosts/{id}/replicas`: may the host start one more replica of
 * the app? Granted while the app's replicas on all hosts that are not down stay within
 * `maxReplicas` (the app's `[scaling] max_replicas`).
 */
export const replicaRequestSchema = z.strictObject({
  project: name(),
  app: name(),
  version: z.number().check(z.int(), z.positive()),
  maxReplicas: z.number().check(z.int(), z.minimum(1)),
  /**
   * The replicas of the app the host has now (those taking calls, retired ones still finishing
   * calls, and grants it holds): taken as the host's own count before another is granted, since
   * its last heartbeat may still count a replica that exited or was retired by a redeploy.
   * Absent: the heartbeat's count stands.
   */
  have: z.optional(count()),
});
export type ReplicaRequest = z.infer<typeof replicaRequestSchema>;
export const replicaAnswerSchema = z.object({ granted: z.boolean(), replicas: count() });
export type ReplicaAnswer = z.infer<typeof replicaAnswerSchema>;

/**
 * How long placement passes over a host the Worker reported it could not connect to (unless it
 * registers again first). A heartbeat does not end it: it proves the host reaches the control
 * plane, not that the Worker reaches the host. The Worker asks a host's `/healthz` before its
 * first call there, so trying it again after this costs a caller nothing.
 */
export const UNREACHABLE_MS = 60_000;

/**
 * `POST {control plane}/internal/hosts/{id}/unreachable`, with the internal token: the Worker
 * could not connect to the host at its address (the call went to another host).
 */
export const unreachableReportSchema = z.strictObject({
  error: z.string().check(z.minLength(1), z.maxLength(500)),
  /**
   * When the Worker began the check that failed (ms since the epoch): a host that registered
   * since (restarted, perhaps at its address put right) is not marked by it. Absent: now.
   */
  checkedAt: z.optional(z.number().check(z.int(), z.nonnegative())),
});
export type UnreachableReport = z.infer<typeof unreachableReportSchema>;

/** A host the Worker could not connect to: when (ms since the epoch) and the error it met. */
const unreachableSchema = z.object({ at: z.number(), error: z.string() });

/**
 * A host as the Worker places work on it: `GET {control plane}/internal/hosts`. A host that
 * stopped is `down` here: to the Worker both mean no work and no run there any more (and a Worker
 * older than `stopped` reads the list all the same).
 */
export const placementHostSchema = z.object({
  id: z.string(),
  address: z.string(),
  state: z.enum(["up", "draining", "down"]),
  slots: z.number(),
  busy: z.number(),
  queued: z.number(),
  apps: z.array(
    z.object({
      project: z.string(),
      app: z.string(),
      replicas: z.number(),
      ready: z.number(),
      busy: z.number(),
    }),
  ),
  /**
   * Set for `UNREACHABLE_MS` after the Worker reported it could not connect to the host: no new
   * work goes there meanwhile. Absent: no such report (or an older control plane).
   */
  unreachable: z.optional(unreachableSchema),
});
export type PlacementHost = z.infer<typeof placementHostSchema>;

/**
 * A host's state as the Worker and the control plane's own calls take it: a host an operator
 * drained takes no new work, as one stopping (`draining`); one that stopped runs nothing, as one
 * down.
 */
export function placementState(state: HostState): PlacementHost["state"] {
  return state === "drained" ? "draining" : state === "stopped" ? "down" : state;
}
export const placementSchema = z.object({ hosts: z.array(placementHostSchema) });
export type Placement = z.infer<typeof placementSchema>;
