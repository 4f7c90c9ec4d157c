/** The runtime host's HTTP server: the internal API over the app registry and replica pool. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { answerClientErrors } from "../common/client-errors.ts";
import { LOOPBACK } from "../common/consts.ts";
import { answerUnreadBodies } from "../common/unread-body.ts";
import { AppVersions } from "./app-versions.ts";
import { AppRegistry } from "./apps.ts";
import { AsyncRuns } from "./async-runs.ts";
import type { HostContext } from "./context.ts";
import { heartbeatSides } from "./heartbeat.ts";
import type { HostOptions, JoinOptions } from "./host-options.ts";
import { asHttpError } from "./http/errors.ts";
import { sendError } from "./http/respond.ts";
import { Intake } from "./intake.ts";
import { DEFAULT_LIMITS, type HostLimits } from "./limits.ts";
import { Membership } from "./membership.ts";
import type { ReplicaPool } from "./pool/pool.ts";
import { RunLogStore } from "./pool/run-logs.ts";
import { startReplicas } from "./replicas.ts";
import { route } from "./router.ts";
import { RunCallbacks } from "./run-callbacks.ts";
import { RunReports } from "./run-reports.ts";
import type { Sandbox } from "./sandbox/sandbox.ts";

export interface RunningHost {
  url: string;
  /** Its id in the control plane's registry, once joined. */
  hostId?: string;
  /**
   * Stops the host. New work is refused at once (503 `{message}`), and async runs still waiting
   * for a slot are withdrawn (their hand-overs answered 503: the Worker keeps them queued).
   * `graceful`: sync calls in flight and running async runs get the limits' `shutdownGraceMs`
   * to end (otherwise none). Async runs still running then end `failure` ("the runtime host
   * stopped"), sent to their callbacks (within CALLBACKS_MS); then every replica stops (SIGTERM,
   * then SIGKILL), and the server. A `close()` during a graceful one ends its grace at once.
   * A graceful stop ends by telling the registry the host left (`stopped`, its places free); one
   * that is not (its supervisor gone) leaves it to go `down`, as a host that crashed.
   */
  close(opts?: { graceful?: boolean }): Promise<void>;
}

/** How long open connections get to finish their answers once the replicas are stopped. */
const DRAIN_MS = 1_000;
/** How long the ends of async runs get to reach their callbacks when the host stops. */
const CALLBACKS_MS = 5_000;

function listen(server: Server, port: number, hostname: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const message =
        err.code === "EADDRINUSE"
          ? `port ${port} on ${hostname} is already in use`
          : `cannot listen on ${hostname}:${port}: ${err.message}`;
      reject(new Error(message, { cause: err }));
    };
    server.once("error", onError);
    server.listen(port, hostname, () => {
      server.off("error", onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/**
 * Stops accepting, stops the replicas (`replicas`: the pool, the spares, the trials' replicas;
 * the pool's calls fail), then ends the connections.
 */
async function shutDown(
  server: Server,
  replicas: ReadonlyArray<{ close(): Promise<void> }>,
  sandbox: Sandbox,
): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  await Promise.all(replicas.map((r) => r.close()));
  await sandbox.settle();
  server.closeIdleConnections();
  const force = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
  await closed;
  clearTimeout(force);
}

export async function startHost(opts: HostOptions): Promise<RunningHost> {
  const limits: HostLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const registry = await AppRegistry.open(opts.home);
  // Its runs' logs, kept across its restarts (those of before are read when asked for).
  const runLogs = await RunLogStore.open(join(opts.home, "host", "run-logs"));
  let membership: Membership | undefined; // once it joins: new replicas ask it for grants, secrets
  const {
    sandbox,
    spares,
    outputs,
    trials,
    pool,
    all: allReplicas,
  } = startReplicas(opts, limits, registry, runLogs, () => membership);
  // Apps with `min_replicas` are warm from the start (in a registry: once registered).
  const warmUp = () => {
    for (const deployment of registry.list()) pool.deployed(deployment);
  };
  if (!opts.join) warmUp();
  const intake = new Intake();
  const versions = new AppVersions(registry, pool, outputs, trials);
  /** Set once the host knows its internal token (at once, or once registered). */
  let ctx: (HostContext & { internalToken: string }) | undefined;

  // A custom app's caller may send the headers the edge takes (workerd: about 128 KiB in all);
  // at Node's 16 KiB such a call got the host's own 431, without a run id and on no record.
  const server = createServer({ maxHeaderSize: 256 * 1024 }, (req, res) => {
    if (!ctx) return sendError(res, 503, "the runtime host is starting: try again shortly");
    route(req, res, ctx).catch((err: unknown) => {
      if (res.headersSent || res.destroyed) {
        res.destroy();
        return;
      }
      const answer = asHttpError(err);
      if (answer) {
        // The rest of a refused body is not worth reading.
        if (answer.status === 413) res.setHeader("connection", "close");
        sendError(res, answer.status, answer.message, answer.more);
        return;
      }
      // (Not `req.destroyed`: a request whose body was read is destroyed, and its caller waits.)
      console.error("runtime host: unexpected error:", err);
      sendError(res, 500, "internal error");
    });
  });

  // A refused body (401, 413, …) is read to its end or its connection closed gracefully.
  answerUnreadBodies(server);
  answerClientErrors(server); // a request Node cannot parse: JSON {message}, no reset
  const hostname = opts.hostname ?? LOOPBACK;
  const address = await listen(server, opts.port, hostname).catch(async (err: unknown) => {
    await shutDown(server, allReplicas, sandbox); // its spares' sandboxes are mounted already
    throw err;
  });
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  membership = opts.join && joining(opts.join, versions, pool, intake);
  let internalToken = opts.internalToken;
  const giveUp = () => membership?.stop(); // a stop while it waits to join: the join rejects
  opts.signal?.addEventListener("abort", giveUp, { once: true });
  try {
    opts.signal?.throwIfAborted();
    const { join } = opts;
    const registered =
      join &&
      (await membership?.join({
        name: join.name,
        address: join.address ?? url,
        slots: join.slots,
        memoryMb: join.memoryMb,
      }));
    internalToken ??= registered?.internalToken;
    if (registered) warmUp();
    if (!internalToken) throw new Error("the runtime host needs an internal token or a host token");
    opts.signal?.throwIfAborted();
  } catch (err) {
    // Refused, or stopped before it joined: nothing of it stays behind (its spares' mounts).
    await shutDown(server, allReplicas, sandbox);
    membership?.stop();
    throw opts.signal?.aborted ? opts.signal.reason : err;
  } finally {
    opts.signal?.removeEventListener("abort", giveUp);
  }
  const reports = new RunReports(
    opts.controlPlaneUrl,
    internalToken,
    undefined,
    membership?.hostId,
    undefined,
    join(opts.home, "host", "reports"),
  );
  const callbacks = new RunCallbacks(internalToken);
  const runs = new AsyncRuns(pool, callbacks, reports);
  ctx = {
    registry,
    versions,
    pool,
    trials,
    outputs,
    runs,
    limits,
    spares,
    reports,
    intake,
    runLogs,
    internalToken,
  };

  /** Ends the grace of a graceful stop. */
  const hurry = new AbortController();
  const hurried = new Promise<void>((resolve) =>
    hurry.signal.addEventListener("abort", () => resolve(), { once: true }),
  );

  /**
   * What is in flight gets `graceMs` to end; then the runs still running are failed. `leave`:
   * once all is stopped, the registry is told the host left.
   */
  async function stop(graceMs: number, leave: boolean): Promise<void> {
    intake.close();
    runs.stopTaking();
    pool.turnAway(); // sync calls waiting for a slot: to another host, not after the grace
    const draining = membership?.beatNow(); // the Worker sends no new work here
    if (graceMs > 0)
      await Promise.race([Promise.all([intake.idle(graceMs), runs.idle(graceMs)]), hurried]);
    runs.close();
    await callbacks.close(CALLBACKS_MS);
    await shutDown(server, allReplicas, sandbox);
    await runLogs.close(); // with the last words of the runs its replicas' stop ended
    await reports.close();
    await draining;
    if (leave) await membership?.leave();
    else membership?.stop();
  }

  let closing: Promise<void> | undefined;
  return {
    url,
    hostId: membership?.hostId,
    close({ graceful = false } = {}) {
      if (!graceful) hurry.abort();
      closing ??= stop(graceful ? limits.shutdownGraceMs : 0, graceful);
      return closing;
    },
  };
}

/** The host's membership of the registry: its heartbeat and what it does with the answers. */
function joining(join: JoinOptions, versions: AppVersions, pool: ReplicaPool, intake: Intake) {
  const membership = new Membership({
    controlPlaneUrl: join.controlPlaneUrl,
    hostToken: join.hostToken,
    refused: join.refused,
    ...heartbeatSides(versions, pool, intake),
  });
  versions.fetchFrom(membership);
  return membership;
}
