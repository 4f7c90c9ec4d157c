/**
 * Names shared by every component: headers, environment variables, defaults.
 * Runtime-agnostic: imported by the Worker, the control plane and the runtime host.
 */

export const DEFAULT_BRAND = "Runlet";

export const HEADER = {
  requestId: "X-Request-Id",
  webhookSecret: "X-Webhook-Secret",
  /** A run call's idempotency key (IETF httpapi draft), and the mark of an answer replayed for one. */
  idempotencyKey: "Idempotency-Key",
  idempotentReplayed: "Idempotent-Replayed",
  /** Internal: the run id the worker assigned, passed to the runtime host. */
  runId: "X-Runlet-Run-Id",
  /** Internal: marks the runtime host's own error answers, told apart from a custom app's. */
  hostError: "X-Runlet-Host-Error",
  /** Internal: where the runtime host reports the end of an async run. */
  callbackUrl: "X-Runlet-Callback-Url",
  /**
   * Internal: how many milliseconds the submitter of an async run will wait for its end; a run
   * that ends sooner is answered with its end (200), and no callback is sent for it.
   */
  waitMs: "X-Runlet-Wait-Ms",
  /**
   * Internal: the id of the app an async run was accepted for, on its hand-over. A host whose
   * app of that name is a later one (the first was deleted, another deployed since) refuses it.
   */
  appId: "X-Runlet-App-Id",
  /**
   * Internal: `1` on the hand-over of an async run without a webhook, whose result nobody reads.
   * The host keeps none and reports none: such a run's result is not bounded by a delivery's.
   */
  noResult: "X-Runlet-No-Result",
} as const;

/** The branded webhook headers are built here and nowhere else. */
export function webhookHeaders(brand: string = DEFAULT_BRAND) {
  return {
    timestamp: `X-${brand}-Webhook-Timestamp`,
    signature: `X-${brand}-Webhook-Signature`,
  } as const;
}

export const ENV = {
  home: "RUNLET_HOME",
  controlPort: "RUNLET_CONTROL_PORT",
  apiPort: "RUNLET_API_PORT",
  hostPort: "RUNLET_HOST_PORT",
  baseUrl: "RUNLET_BASE_URL",
  apiUrl: "RUNLET_API_URL",
  hostUrl: "RUNLET_HOST_URL",
  token: "RUNLET_TOKEN",
  project: "RUNLET_PROJECT",
  internalToken: "RUNLET_INTERNAL_TOKEN",
  /** A Node control plane for others: the secret `runlet init` makes its first user with. */
  bootstrapToken: "RUNLET_BOOTSTRAP_TOKEN",
  brand: "RUNLET_BRAND",
  /** Set by `runlet start`: the component's stdin is its supervisor's pipe (common/parent-watch.ts). */
  supervised: "RUNLET_SUPERVISED",
  /** The control plane's database: a libSQL URL and its token (default: a file in RUNLET_HOME). */
  databaseUrl: "RUNLET_DATABASE_URL",
  databaseToken: "RUNLET_DATABASE_TOKEN",
  /** The Worker: `1` lets webhooks reach private and loopback addresses (npm start sets it). */
  webhookAllowPrivate: "RUNLET_WEBHOOK_ALLOW_PRIVATE",
  /** The runtime host: `off` runs apps unsandboxed; ranges apps may reach; the replicas' uids. */
  sandbox: "RUNLET_SANDBOX",
  sandboxAllowNets: "RUNLET_SANDBOX_ALLOW_NETS",
  sandboxUidBase: "RUNLET_SANDBOX_UID_BASE",
  /** A runtime host that joins a control plane (docs/hosts.md): its token, name, address, slots. */
  hostToken: "RUNLET_HOST_TOKEN",
  hostName: "RUNLET_HOST_NAME",
  hostAddress: "RUNLET_HOST_ADDRESS",
  /** 1: the Node control plane is behind a proxy of its operator's (X-Forwarded-For, -Proto). */
  trustProxy: "RUNLET_TRUST_PROXY",
  /** The address a host listens on, when it is not its RUNLET_HOST_ADDRESS (a tunnel, NAT). */
  hostListen: "RUNLET_HOST_LISTEN",
  /** A file holding the host token, read at each registration (`runlet start`'s own hosts). */
  hostTokenFile: "RUNLET_HOST_TOKEN_FILE",
  hostSlots: "RUNLET_HOST_SLOTS",
  /** The memory a host counts as its own (default: the machine's); its default slots follow. */
  hostMemoryMb: "RUNLET_HOST_MEMORY_MB",
  /**
   * `runlet start` and the Node control plane: the address the control plane and the run API
   * listen on and are known by (default 127.0.0.1), so hosts on other machines can join.
   */
  listen: "RUNLET_LISTEN",
  /** `runlet start`: how many runtime hosts it runs (default 1). */
  hosts: "RUNLET_HOSTS",
  /** `runlet start`: the size at which a log in RUNLET_HOME/logs is rotated, and how many kept. */
  logMaxBytes: "RUNLET_LOG_MAX_BYTES",
  logKeep: "RUNLET_LOG_KEEP",
} as const;

/** What a replica finds in its environment (set by the runtime host; apps may read them). */
export const APP_ENV = {
  project: "RUNLET_PROJECT",
  app: "RUNLET_APP",
  version: "RUNLET_VERSION",
  /** A managed spare process that waits for its app (runtime-host/pool/spares.ts). */
  spare: "RUNLET_SPARE",
} as const;

/**
 * The runtime host's exit status once the control plane refused it (its host token revoked or
 * wrong, its registration bad): starting it again would be refused too, so `runlet start` does
 * not, and keeps the rest of Runlet running.
 */
export const HOST_REFUSED_EXIT = 3;

/**
 * The largest `X-Webhook-Secret` (characters) the run API takes: an HMAC key longer than this
 * adds nothing. The CLI refuses a longer one before it sends anything.
 */
export const MAX_WEBHOOK_SECRET_LENGTH = 1024;

export const DEFAULT_PORT = { control: 8080, api: 8787, host: 8790 } as const;

export const LOOPBACK = "127.0.0.1";

/** Issuer and audience of every JWT the control plane signs. */
export const JWT_ISSUER = "runlet";
export const JWT_ALG = "ES256";
