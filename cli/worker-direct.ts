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
 */
import { type AddressInfo, connect, createServer, type Socket } from "node:net";

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
 * port listens, as the proxy's did once its workerd did.
 */
export function directPort(hostname: string, port: number) {
  let target = deferred<{ host: string; port: number }>();
  let paused = true;
  const open = new Set<Socket>();
  // Half-open both ways: a client may end its side once its request is sent and still read
  // the answer, as it could from workerd itself.
  const server = createServer({ allowHalfOpen: true }, (client) => {
    open.add(client);
    client.setNoDelay(true);
    client.once("close", () => open.delete(client));
    client.on("error", () => client.destroy());
    void target.promise.then((to) => {
      if (client.destroyed) return;
      const worker = connect({ ...to, allowHalfOpen: true }).setNoDelay(true);
      open.add(worker);
      worker.once("close", () => open.delete(worker));
      worker.on("error", () => client.destroy());
      client.once("close", () => worker.destroy());
      client.pipe(worker).pipe(client);
    });
  });
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
