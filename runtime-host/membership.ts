/**
 * The host's side of the registry (docs/hosts.md): it registers with the control plane using its
 * host token — and learns the internal token the Worker calls it with — then sends a heartbeat
 * every few seconds with its load and the apps it has warm, and stops the apps the control
 * plane says are gone. A heartbeat answered 404 (the control plane forgot it) registers again;
 * an unreachable control plane is tried again, the host serving meanwhile. A host that stopped
 * gracefully says it leaves, after its last heartbeat: the registry shows it `stopped`.
 */
import { setTimeout as sleep } from "node:timers/promises";
import {
  type Heartbeat,
  type HeartbeatAnswer,
  heartbeatAnswerSchema,
  type Registered,
  type Registration,
  type ReplicaRequest,
  registeredSchema,
  replicaAnswerSchema,
} from "../common/protocol/hosts.ts";
import { controlPlanePath } from "../common/protocol/paths.ts";
import type { BundleSource } from "./app-versions.ts";
import { ControlPlaneReads } from "./control-plane-reads.ts";
import { whyFetchFailed } from "./fetch-failure.ts";
import type { GrantAnswer } from "./pool/grants.ts";
import { ADDRESS_WAIT_MS, Refused, refusal, stillHeld } from "./refusal.ts";
import { timeoutOr } from "./timeout-signal.ts";

export interface MembershipOptions {
  controlPlaneUrl: string;
  /** Read at each request (a token file may be replaced meanwhile). */
  hostToken: () => string;
  /** A heartbeat was refused (401: the host token was revoked); heartbeats stop. */
  refused?: (reason: string) => void;
  /** What the host says of itself now (its state, load and warm apps). */
  heartbeat: () => Heartbeat;
  /** What the control plane answered: apps deleted (stop them), current versions. */
  answered: (answer: HeartbeatAnswer) => void;
  /** How long to try again while a live host of another token holds the address. */
  addressWaitMs?: number;
}

/** Pauses between tries to register, growing to the last; after failed heartbeats, to the tick. */
const RETRY_MS = [250, 500, 1_000, 2_000, 5_000];

/**
 * How long registration fails before the host says so: under `runlet start` the hosts start
 * beside the control plane, and every start's log began "cannot register yet (… ECONNREFUSED
 * …); retrying", an error line an operator learnt to skip.
 */
const QUIET_MS = 3_000;

/** How long a heartbeat (or a registration) waits for the control plane's answer. */
export const POST_TIMEOUT_MS = 5_000;

/** The pause before the next heartbeat: the tick, or after `failures` in a row, RETRY_MS to it. */
export function heartbeatPause(tickMs: number, failures: number): number {
  return failures ? Math.min(tickMs, RETRY_MS[failures - 1] ?? tickMs) : tickMs;
}

/**
 * How long a host that is starting keeps trying, at RETRY_MS's first pause, a control plane that
 * refuses the connection: under `runlet start` the control plane starts beside it, and nothing
 * listening yet costs neither side anything. The growing pauses made a start's host register up
 * to 2 s after the control plane was up (5 s under load), its "ready" line that much later.
 */
const STARTING_MS = 30_000;

/** The pause after failed registration attempt `attempt` (from 0), `elapsedMs` into trying. */
export function registerPause(attempt: number, err: unknown, elapsedMs: number): number {
  const refused =
    err instanceof Error && (err.cause as { code?: unknown })?.code === "ECONNREFUSED";
  if (refused && elapsedMs < STARTING_MS) return RETRY_MS[0] as number;
  return RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)] as number;
}

export class Membership implements BundleSource {
  #hostId: string | undefined;
  #registration: Registration | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The heartbeat being sent: one at a time, so a later state never arrives first. */
  #beating: Promise<void> = Promise.resolve();
  /**
   * A heartbeat and a grant request never overlap: a heartbeat says how many replicas of each
   * app the host has, and one composed before a grant but written after it lowered the count the
   * grant had raised, so another host was granted that place too (7 replicas of a
   * `max_replicas = 6` app over three hosts, seen under load). A heartbeat waits for the grant
   * requests under way; grant requests wait for the heartbeat that is to go.
   */
  #grantsAsked = new Set<Promise<unknown>>();
  #beatDue: Promise<void> | undefined;
  readonly #stopped = new AbortController();
  /** It said, or is saying, it leaves: no heartbeat goes after that. */
  #leaving = false;

  readonly #reads: ControlPlaneReads;

  constructor(private readonly opts: MembershipOptions) {
    this.#reads = new ControlPlaneReads(opts.controlPlaneUrl, opts.hostToken, this.#stopped.signal);
  }

  get hostId(): string | undefined {
    return this.#hostId;
  }

  /** Registers, trying again until the control plane takes it; then heartbeats. */
  async join(registration: Registration): Promise<Registered> {
    this.#registration = registration;
    const began = Date.now();
    let said = false;
    let held: number | undefined; // since when the address is refused as another host's
    for (let attempt = 0; ; attempt++) {
      try {
        const registered = await this.#register();
        this.#beatSoon(registered.heartbeatMs);
        return registered;
      } catch (err) {
        if (err instanceof Refused) {
          held = stillHeld(err, held, this.opts.addressWaitMs ?? ADDRESS_WAIT_MS);
          said = true; // its own line, not "cannot register"
        }
        const pause = registerPause(attempt, err, Date.now() - began);
        if (!said && Date.now() - began >= QUIET_MS) {
          said = true;
          console.error(
            `runtime host: cannot register with ${this.opts.controlPlaneUrl} for ${Math.round((Date.now() - began) / 1000)} s (${whyFetchFailed(err)}); still trying`,
          );
        }
        await sleep(pause, undefined, { signal: this.#stopped.signal });
      }
    }
  }

  /** Sends a heartbeat now, after the one being sent (a state change: draining). */
  beatNow(): Promise<void> {
    if (this.#leaving) return Promise.resolve();
    return this.#beat().catch(() => {});
  }

  /**
   * May this host start one more replica of the app (its `max_replicas` over all hosts)? And do
   * other hosts hold some of its places: the app's count over all hosts passes this host's own?
   */
  async mayStart(req: ReplicaRequest): Promise<GrantAnswer> {
    while (this.#beatDue) await this.#beatDue;
    const asked = (async () => {
      const res = await this.#post(`${controlPlanePath.hosts}/${this.#hostId}/replicas`, req);
      const answer = replicaAnswerSchema.safeParse(await res.json().catch(() => undefined));
      if (!res.ok || !answer.success) {
        const said = res.ok
          ? `its answer (${res.status}) was not a grant's`
          : `it answered ${res.status}`;
        return { granted: false, elsewhere: true, unasked: said };
      }
      const { granted, replicas } = answer.data;
      return { granted, elsewhere: req.have === undefined || replicas > req.have };
    })();
    this.#grantsAsked.add(asked);
    try {
      return await asked;
    } finally {
      this.#grantsAsked.delete(asked);
    }
  }

  current(project: string, app: string) {
    return this.#reads.current(project, app);
  }

  secrets(project: string) {
    return this.#reads.secrets(project);
  }

  bundle(project: string, app: string, version: number) {
    return this.#reads.bundle(project, app, version);
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#stopped.abort();
  }

  /**
   * The host stopped gracefully (its work ended, its replicas stopped): no more heartbeats, and
   * once the one being sent is answered, `POST …/{id}/leave`: the registry shows it `stopped`,
   * not `down` after 15 s of silence, and frees its places of `max_replicas` at once (a control
   * plane not told, unreachable or older, lists it `down` as before). Then as `stop()`.
   */
  async leave(): Promise<void> {
    this.#leaving = true;
    clearTimeout(this.#timer);
    // Its token refused (revoked): the leave would be too, and its log said "could not tell the
    // control plane it left: it answered 401" after the reason it stopped. The revoke listed
    // it `stopped` already.
    const refused = await this.#beating.then(
      () => false,
      (err: unknown) => err instanceof Refused,
    );
    const unsaid = "runtime host: could not tell the control plane it left";
    try {
      if (this.#hostId && !this.#stopped.signal.aborted && !refused) {
        const res = await this.#post(`${controlPlanePath.hosts}/${this.#hostId}/leave`);
        // A refusal was as silent as an answer: the host looked stopped to whoever read its log.
        const said = (await res.json().catch(() => undefined)) as { message?: unknown } | undefined;
        if (!res.ok)
          console.error(
            `${unsaid}: it answered ${res.status}${typeof said?.message === "string" ? `: ${said.message}` : ""}`,
          );
      }
    } catch (err) {
      console.error(`${unsaid}: ${whyFetchFailed(err)}`);
    }
    this.stop();
  }

  async #register(): Promise<Registered> {
    const token = this.opts.hostToken();
    const res = await this.#post(controlPlanePath.hosts, this.#registration, token);
    const body = await res.json().catch(() => undefined);
    // Read before `runlet start`'s control plane replaced a revoked one, sent once it listened.
    if (res.status === 401 && this.opts.hostToken() !== token)
      throw new Error("its host token was replaced as it was sent");
    // 409: another live host has this address (its own --address is needed), or this name.
    if (res.status === 401 || res.status === 400 || res.status === 409)
      throw refusal(res.status, body);
    const registered = registeredSchema.safeParse(body);
    if (!res.ok || !registered.success) throw new Error(`the control plane answered ${res.status}`);
    this.#hostId = registered.data.hostId;
    return registered.data;
  }

  /**
   * The next heartbeat in `ms` (the tick); after a failed one sooner, RETRY_MS growing to the
   * tick. A heartbeat lost to a stalled link fails only at its timeout (5 s), and a whole tick
   * more before the next try put the tries at 2, 9 and 16 s after the last one heard: a link
   * that lost them for 8 s showed the host down (DOWN_AFTER_MS, 15 s) though it was back after 8.
   * Now at 2, 7.25 and 12.75 s: down only past a stall of about 10.75 s.
   */
  #beatSoon(ms: number, failures = 0): void {
    if (this.#stopped.signal.aborted || this.#leaving) return;
    const pause = heartbeatPause(ms, failures);
    this.#timer = setTimeout(async () => {
      try {
        await this.#beat();
        if (failures) console.error(`runtime host: heartbeat answered again (${failures} failed)`);
        return this.#beatSoon(ms);
      } catch (err) {
        if (err instanceof Refused) {
          this.opts.refused?.(err.message);
          return; // no more heartbeats: the host stops
        }
        if (!failures) console.error(`runtime host: heartbeat failed: ${whyFetchFailed(err)}`);
      }
      this.#beatSoon(ms, failures + 1);
    }, pause);
    this.#timer.unref();
  }

  /** Sends a heartbeat after the one being sent, once the grant requests under way are answered. */
  #beat(): Promise<void> {
    const beat = this.#beating
      .catch(() => {})
      .then(async () => {
        await Promise.allSettled([...this.#grantsAsked]);
        await this.#sendBeat();
      });
    this.#beating = beat;
    const due = beat.then(
      () => {},
      () => {},
    );
    this.#beatDue = due;
    void due.then(() => {
      if (this.#beatDue === due) this.#beatDue = undefined;
    });
    return beat;
  }

  async #sendBeat(): Promise<void> {
    const res = await this.#post(
      `${controlPlanePath.hosts}/${this.#hostId}/heartbeat`,
      this.opts.heartbeat(),
    );
    if (res.status === 404) {
      await res.body?.cancel();
      await this.#register(); // forgotten (down too long): the same address keeps its id
      return;
    }
    if (res.status === 401) throw refusal(401, await res.json().catch(() => undefined));
    const answer = heartbeatAnswerSchema.safeParse(await res.json().catch(() => undefined));
    if (!res.ok || !answer.success) throw new Error(`the control plane answered ${res.status}`);
    this.opts.answered(answer.data);
  }

  #post(path: string, body?: unknown, token = this.opts.hostToken()): Promise<Response> {
    return fetch(this.opts.controlPlaneUrl + path, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: timeoutOr(POST_TIMEOUT_MS, this.#stopped.signal),
    });
  }
}
