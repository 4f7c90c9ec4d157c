/**
 * Where the Worker sends an app's work (docs/hosts.md): the registry's hosts that are up, as
 * the control plane lists them from their heartbeats (`GET /internal/hosts`), kept by each
 * isolate for a second. For an app, a host with a free slot of it comes first (its replicas
 * there × replica_concurrency, less its calls there), then a host that may start one, then the
 * shortest wait per replica; within each, each app prefers its own order (rendezvous hashing:
 * its calls keep going where its replicas and caches are) as long as that host is not much
 * busier than the others; then the least loaded. A host a call could not reach is passed over by
 * this isolate for a few seconds, and by every isolate while the registry has it unreachable
 * (the Worker told it: host-reach.ts). With
 * no host up (or the registry not readable, nothing known yet) the Worker's RUNTIME_HOST_URL is
 * the one host, if set, unless the registry has that host draining (stopping, or drained).
 */
import { type PlacementHost, placementSchema } from "../common/protocol/hosts.ts";
import { controlPlanePath } from "../common/protocol/paths.ts";
import { rendezvousOrder } from "../common/rendezvous.ts";
import { controlPlaneFetch } from "./control-plane.ts";
import type { Env } from "./env.ts";

/** A host to send work to: its id in the registry (null: the configured RUNTIME_HOST_URL). */
export interface Target {
  id: string | null;
  url: string;
}

/** How long an isolate keeps the list of hosts. */
const PLACEMENT_TTL_MS = 1_000;
/** How long a host a call could not reach is passed over. */
const SUSPECT_MS = 5_000;
/** A sticky host is kept while its load is at most this much above the average. */
const LOAD_BOUND = 1.25;

let known: { hosts: PlacementHost[]; at: number } | undefined;
/** When the refresh of `known` under way began: one at a time, as long as a fetch may take. */
let refreshing: number | undefined;
const FETCH_MS = 2_000;
const suspects = new Map<string, number>();
/**
 * Calls this isolate has open on each host, and on each host per app: a burst spreads before
 * the heartbeats say so.
 */
const open = new Map<string, number>();

const count = (key: string, by: number) => {
  const now = (open.get(key) ?? 0) + by;
  if (now > 0) open.set(key, now);
  else open.delete(key);
};
const appKey = (url: string, project: string, app: string) => `${url}\n${project}/${app}`;

/** A call of the app to `url` begins; the function returned says it ended. */
export function inFlight(url: string, project: string, app: string): () => void {
  const keys = [url, appKey(url, project, app)];
  for (const key of keys) count(key, 1);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    for (const key of keys) count(key, -1);
  };
}

async function fetchHosts(env: Env): Promise<PlacementHost[] | undefined> {
  try {
    const res = await controlPlaneFetch(env, controlPlanePath.hosts, {
      headers: { authorization: `Bearer ${env.INTERNAL_TOKEN}` },
      signal: AbortSignal.timeout(FETCH_MS),
    });
    const parsed = placementSchema.safeParse(await res.json().catch(() => undefined));
    if (!res.ok || !parsed.success) return undefined;
    known = { hosts: parsed.data.hosts, at: Date.now() };
    return parsed.data.hosts;
  } catch {
    return undefined;
  }
}

/**
 * The hosts as the registry last said (refreshed once a second, one request at a time). A call
 * that finds a refresh under way goes on with the list as it was: it never awaits the fetch of
 * another request (or of a run shard, in the same isolate). Sharing that promise made workerd
 * resolve it across request contexts; once the context that began it was gone (an alarm
 * cancelled), the calls waiting on it were cancelled too (500 to their callers, about 4% of a
 * soak's sync calls from its 33rd minute on) and the list was never fetched again.
 */
export async function registeredHosts(env: Env): Promise<PlacementHost[]> {
  const now = Date.now();
  if (known && now - known.at < PLACEMENT_TTL_MS) return known.hosts;
  if (known && refreshing !== undefined && now - refreshing < FETCH_MS) return known.hosts;
  refreshing = now;
  try {
    return (await fetchHosts(env)) ?? known?.hosts ?? [];
  } finally {
    if (refreshing === now) refreshing = undefined;
  }
}

/**
 * Whether the registry has host `id` up or draining: false if it says down or no longer lists
 * it; undefined if the registry cannot be read now (then nobody can tell).
 */
export async function isHostAlive(env: Env, id: string): Promise<boolean | undefined> {
  await registeredHosts(env);
  if (!known || Date.now() - known.at > 10 * PLACEMENT_TTL_MS) return undefined;
  const host = known.hosts.find((h) => h.id === id);
  return host !== undefined && host.state !== "down";
}

/** A call to `url` could not connect: pass the host over for a while. */
export function suspect(url: string): void {
  suspects.set(url, Date.now() + SUSPECT_MS);
  reached.delete(url);
}

/**
 * Hosts this isolate has had an answer from (any HTTP answer: it connected), until a call there
 * fails to connect. A sync call goes to a host not in it only after the host answered a health
 * check (host-reach.ts): a call the host never got may go to the next host.
 */
const reached = new Set<string>();

/** Whether this isolate has reached `url` (since its last failure to). */
export const wasReached = (url: string): boolean => reached.has(url);

/** `url` answered this isolate. */
export function answered(url: string): void {
  reached.add(url);
}

/**
 * The hosts to try for a call of the app, best first (at least the fallback, if any), counting
 * nothing: the order `placeCall` would place a call in now, which the tests read. A call is
 * placed by `placeCall`, which counts it as it ranks.
 * `concurrency`: the app's `replica_concurrency` (1 where the caller does not know it);
 * `capacity`: its `max_replicas × replica_concurrency` (unbounded where not known).
 */
export async function hostsFor(
  env: Env,
  project: string,
  app: string,
  concurrency = 1,
  capacity = Number.POSITIVE_INFINITY,
): Promise<Target[]> {
  return targetsAmong(await registeredHosts(env), env, project, app, concurrency, capacity);
}

/** A call of an app, counted open on one host at a time (`inFlight`). */
export interface OpenCall {
  /** The call is now on `url`: counted there, and no longer on any host before. */
  on(url: string): void;
  /** It ended: counted nowhere. */
  end(): void;
}

/**
 * The hosts for a call of the app, as `hostsFor` ranks them less those `skip` names, with the
 * call counted open on the first from the moment it is placed. A call counted only after an
 * await (the host's first health check, the hand-over's fetch) left every call of a burst placed
 * meanwhile ranked as if it were alone: all went to the same host, where it started all of the
 * app's replicas (60 sync calls of a `max_replicas = 6` app, all on one of three hosts, under
 * load).
 */
export async function placeCall(
  env: Env,
  target: { project: string; app: string; concurrency?: number; capacity?: number },
  skip: (url: string) => boolean = () => false,
): Promise<{ hosts: Target[]; open: OpenCall }> {
  const { project, app, concurrency = 1, capacity = Number.POSITIVE_INFINITY } = target;
  const listed = await registeredHosts(env);
  // From here to the count, nothing is awaited: the next call placed sees this one.
  const hosts = targetsAmong(listed, env, project, app, concurrency, capacity).filter(
    (h) => !skip(h.url),
  );
  let done: (() => void) | undefined;
  const open: OpenCall = {
    on(url) {
      done?.();
      done = inFlight(url, project, app);
    },
    end() {
      done?.();
      done = undefined;
    },
  };
  if (hosts[0]) open.on(hosts[0].url);
  return { hosts, open };
}

function targetsAmong(
  listed: PlacementHost[],
  env: Env,
  project: string,
  app: string,
  concurrency: number,
  capacity: number,
): Target[] {
  const now = Date.now();
  // Not a host the Worker could not connect to, in this isolate or (the registry says) another.
  const up = listed.filter(
    (h) => h.state === "up" && !h.unreachable && !((suspects.get(h.address) ?? 0) > now),
  );
  const target = { project, app, concurrency, maxReplicas: capacity / concurrency };
  if (up.length === 0) {
    // Every registered host suspect: try them anyway rather than fail without trying.
    const all = (known?.hosts ?? []).filter((h) => h.state === "up");
    if (all.length > 0) return rank(all, target);
    // Not the configured host where the registry has it taking no work: stopping, or drained by
    // an operator (`runlet start`'s lone host, drained, got the calls all the same).
    const fallback = env.RUNTIME_HOST_URL;
    const refusing = known?.hosts.some((h) => h.address === fallback && h.state === "draining");
    return fallback && !refusing ? [{ id: null, url: fallback }] : [];
  }
  return rank(up, target);
}

function rank(
  hosts: PlacementHost[],
  {
    project,
    app,
    concurrency,
    maxReplicas,
  }: { project: string; app: string; concurrency: number; maxReplicas: number },
): Target[] {
  const work = (h: PlacementHost) => h.busy + h.queued + (open.get(h.address) ?? 0);
  const load = (h: PlacementHost) => work(h) / Math.max(1, h.slots);
  const slots = hosts.reduce((n, h) => n + h.slots, 0);
  const busy = hosts.reduce((n, h) => n + work(h), 0);
  const bound = (busy / Math.max(1, slots)) * LOAD_BOUND + 1 / Math.max(1, slots);
  // The app on a host: its replicas there, and its calls there (the heartbeat's, or this
  // isolate's open ones if more: they are live, the heartbeat up to 3 s old).
  const appOn = (h: PlacementHost) => h.apps.find((a) => a.project === project && a.app === app);
  const calls = (h: PlacementHost) =>
    Math.max(appOn(h)?.busy ?? 0, open.get(appKey(h.address, project, app)) ?? 0);
  const free = (h: PlacementHost) => (appOn(h)?.ready ?? 0) * concurrency - calls(h);
  // Its calls waiting per replica there: where all are busy, the shortest wait.
  const waiting = (h: PlacementHost) => -free(h) / Math.max(1, appOn(h)?.replicas ?? 0);
  const key = `${project}/${app}`;
  const sticky = rendezvousOrder(key, hosts);
  // A host without the app starts a replica only while the app has fewer than its max_replicas:
  // at the bound, its calls wait where its replicas are (a host without one would refuse them,
  // and a call with a streamed body is sent once).
  const replicas = hosts.reduce((n, h) => n + (appOn(h)?.replicas ?? 0), 0);
  const mayStart = (h: PlacementHost) =>
    !appOn(h) && replicas < maxReplicas && load(h) <= bound && h.busy < h.slots;
  const ordered = [
    ...sticky.filter((h) => free(h) > 0 && load(h) <= bound),
    ...sticky.filter(mayStart),
    ...hosts.filter((h) => appOn(h)).sort((a, b) => waiting(a) - waiting(b)),
    ...[...hosts].sort((a, b) => load(a) - load(b)),
  ];
  const seen = new Set<string>();
  return ordered
    .filter((h) => !seen.has(h.id) && seen.add(h.id))
    .map((h) => ({ id: h.id, url: h.address }));
}

/** For tests: forget what this isolate knows. */
export function forgetPlacement(): void {
  known = undefined;
  refreshing = undefined;
  suspects.clear();
  open.clear();
  reached.clear();
}
