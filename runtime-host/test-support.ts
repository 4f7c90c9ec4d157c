/** Helpers of the runtime host's tests: temp homes, a host on one, app bundles and an API client. */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AppConfig, appConfigSchema, type BundleFile } from "../common/app-config.ts";
import { digestOfBundle } from "../common/bundle-digest.ts";
import { HEADER } from "../common/consts.ts";
import type { DeployRequest } from "../common/protocol/deploy.ts";
import { AppVersions, type Current } from "./app-versions.ts";
import { AppRegistry } from "./apps.ts";
import type { HostOptions } from "./host-options.ts";
import { type AppStats, ReplicaPool } from "./pool/pool.ts";
import { WorkloadError } from "./pool/workload.ts";
import { NO_SANDBOX } from "./sandbox/sandbox.ts";
import { startHost } from "./server.ts";

export const TOKEN = "test-internal-token-0123456789abcdef";

export const newHome = () => mkdtemp(join(tmpdir(), "runlet-host-"));

export const removeHome = (home: string) => rm(home, { recursive: true, force: true });

/** A host on `home` as the tests run one: no sandbox, a free port, the test token. */
export const startTestHost = (home: string, options: Partial<HostOptions> = {}) =>
  startHost({ sandbox: NO_SANDBOX, port: 0, home, internalToken: TOKEN, ...options });

export function bundle(files: Record<string, string>): BundleFile[] {
  return Object.entries(files).map(([path, text]) => ({
    path,
    contentBase64: Buffer.from(text).toString("base64"),
  }));
}

export const configOf = (name: string, extra: Record<string, unknown> = {}): AppConfig =>
  appConfigSchema.parse({ name, ...extra });

/** Whether the process has ended (a zombie its parent has not reaped yet counts as ended). */
export function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    // Linux: the state is the field after the command, which is in parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

/** Polls `check` every 20 ms until it holds; fails after `timeoutMs`. */
export async function waitUntil(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Polls `probe` every 20 ms until `ok` holds for its value, which it returns; bounded. */
export async function eventually<T>(
  probe: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** What a test's stand-in for a receiver of the host's POSTs (the Worker's callback) got. */
export interface Received<Body> {
  auth: string | undefined;
  body: Body;
}

/** A local server that records every JSON body POSTed to it and answers 204. */
export async function startReceiver<Body = Record<string, unknown>>(): Promise<{
  url: string;
  received: Received<Body>[];
  close(): Promise<void>;
}> {
  const received: Received<Body>[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => {
      text += chunk;
    });
    req.on("end", () => {
      received.push({ auth: req.headers.authorization, body: JSON.parse(text) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {} };
}

/** The worker's and control plane's view of the host's internal API. */
export function hostClient(url: string, token: string = TOKEN) {
  const auth = { authorization: `Bearer ${token}` };
  const hostMetrics = async () => {
    const res = await fetch(`${url}/internal/metrics`, { headers: auth });
    return (await res.json()) as {
      apps: AppStats[];
      spares: { managed: number[]; custom: number[] };
    };
  };
  const send = async (method: string, path: string, body: unknown) =>
    answer(
      await fetch(`${url}${path}`, {
        method,
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
  return {
    async deploy(
      project: string,
      app: string,
      version: number,
      files: Record<string, string>,
      config: AppConfig = configOf(app),
    ): Promise<Answer> {
      return send("PUT", `/internal/apps/${project}/${app}`, {
        version,
        config,
        files: bundle(files),
      });
    },
    /** A deploy's trial: starts a replica of the version before it is current. */
    async trial(
      project: string,
      app: string,
      version: number,
      files: Record<string, string>,
      config: AppConfig = configOf(app),
    ): Promise<Answer> {
      const bundled = bundle(files);
      const digest = await digestOfBundle(bundled);
      return send("POST", `/internal/apps/${project}/${app}/trial`, {
        version,
        config,
        files: bundled,
        digest,
      });
    },
    async invoke(
      project: string,
      app: string,
      fn: string,
      body?: string | Uint8Array,
      headers: Record<string, string> = {},
    ): Promise<Answer> {
      const res = await fetch(
        `${url}/internal/invoke/${project}/${app}/${encodeURIComponent(fn)}`,
        {
          method: "POST",
          headers: { ...auth, [HEADER.runId]: "run_test", ...headers },
          body,
          // A guard against a hang under the test's own timeout (60 s): a replica filling its
          // 1 GiB of memory took past 20 s on a two-core machine running other agents' tests.
          signal: AbortSignal.timeout(50_000),
        },
      );
      return answer(res);
    },
    metrics: async () => (await hostMetrics()).apps,
    /** Pids of the spare processes waiting for an app. */
    spares: async () => (await hostMetrics()).spares.managed,
    customSpares: async () => (await hostMetrics()).spares.custom,
  };
}

/** The `WorkloadError` that `promise` rejects with (fails the test if it resolves or rejects otherwise). */
export async function failureOf(promise: Promise<unknown>): Promise<WorkloadError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  // Thrown, not asserted with vitest's expect: benchmarks import this file too.
  if (!(err instanceof WorkloadError))
    throw new Error(`expected a WorkloadError, got ${String(err)}`);
  return err;
}

/** Version 1 of app `a`, whose function answers the app's id: two apps of one name told apart. */
export const deployOfApp = (appId: string): DeployRequest => ({
  version: 1,
  config: configOf("a"),
  files: bundle({ "main.mjs": `export const run = () => "${appId}";` }),
});

/** That version as the control plane names it. */
export const currentOfApp = async (appId: string): Promise<Current> => ({
  version: 1,
  digest: await digestOfBundle(deployOfApp(appId).files),
  appId,
});

/**
 * A host's registry (in `home`) and app versions, where no replica starts, fetching app `a` from
 * a control plane whose current version is `now.current` (first the app of id `appId`): a test
 * changes it to deploy another app under the name. The caller closes `pool`.
 */
export async function versionsOfApp(home: string, appId: string) {
  const registry = await AppRegistry.open(home);
  const pool = new ReplicaPool(
    () => {
      throw new Error("no replica starts here");
    },
    { queueWaitMs: 1_000, maxWaiting: 10 },
  );
  const versions = new AppVersions(registry, pool);
  const now = { current: await currentOfApp(appId) };
  versions.fetchFrom({
    current: async () => now.current,
    bundle: async () => deployOfApp(now.current.appId as string),
  });
  return { registry, pool, versions, now };
}
