/**
 * The run API's port of `runlet start` (without `--inspect`), passed straight to the Worker's
 * workerd. wrangler's dev server puts its own proxy in front of the Worker: a second workerd
 * whose one Durable Object takes every request and fetches it again from the Worker's. That hop
 * cost about 0.5-0.8 ms of CPU per request, and it answered a POST `503 Your worker restarted
 * mid-request` when its kept-alive connection to the Worker had just been closed for being idle
 * 5 s (cloudflare/workers-sdk#14641), though nothing had restarted (docs/benchmarks.md).
 *
 * So wrangler starts the Worker as before (bundle, workerd, Durable Objects, persistence), but
 * with this in place of its proxy: a TCP server on the run API's port that joins each connection
 * to the Worker's workerd, whose port wrangler picks anew each time it starts one (a reload of a
 * changed Worker). Between wrangler's `reloadStart` and `reloadComplete` new connections wait,
 * as its proxy's requests did; those open when a workerd ends are cut with it.
 *
 * workerd closes a connection idle for 5 s. A client that keeps its connection longer does not
 * see that close (worker-joint.ts): its next request goes to workerd on a new connection, and one that
 * crossed the close on the way is sent again there.
 */
import { type AddressInfo, createServer, type Socket } from "node:net";
import { type IdleRules, join, type Target } from "./worker-joint.ts";

/** Where wrangler says the Worker's workerd listens (its `reloadComplete` event's `proxyData`). */
interface Reloaded {
  proxyData: { userWorkerUrl: { hostname: string; port: string } };
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

/**
 * A stand-in for wrangler's ProxyController (`unstable_DevEnv`'s `proxyFactory`): the members
 * wrangler 4.72's DevEnv and the object `startWorker` returns use. `ready` resolves once the
 * port listens, as the proxy's did once its workerd did. `idle` is for tests.
 */
export function directPort(hostname: string, port: number, idle?: IdleRules) {
  let target = deferred<Target>();
  let paused = true;
  const open = new Set<Socket>();
  const server = createServer({ allowHalfOpen: true }, (client) =>
    join(client, { target: () => target.promise, reloading: () => paused, open, idle }),
  );
  const ready = deferred<{ url: URL }>();
  server.once("error", ready.reject);
  server.listen(port, hostname, () => {
    const { port: listening } = server.address() as AddressInfo;
    ready.resolve({ url: new URL(`http://${hostname}:${listening}`) });
  });
  const pause = () => {
    if (paused) return;
    paused = true;
    target = deferred();
  };
  return {
    ready,
    runtimeMessageMutex: { drained: async () => {} },
    onConfigUpdate: pause,
    onBundleStart: pause,
    onReloadStart: pause,
    onReloadComplete({ proxyData: { userWorkerUrl } }: Reloaded) {
      paused = false;
      target.resolve({ host: userWorkerUrl.hostname, port: Number(userWorkerUrl.port) });
    },
    async teardown() {
      for (const socket of open) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
