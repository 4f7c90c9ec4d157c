/**
 * A deploy's trial (docs/hosts.md, "A deploy starts a replica first"): before the control plane
 * records a version, it asks one host to start a replica of it. The replica starts as any other
 * (a spare, the project's secrets, the start limit); the answer is that it is ready, or how it
 * failed with the last lines it wrote (a managed module that exports no function fails too), and
 * whether that was the app's fault or the host's own. A replica that started is held for the
 * version's first use: once the version is current, the pool's next new replica of it is this
 * one (`claim`), so the deploy's first call does not pay a second cold start. One never claimed
 * stops after the app's `cooldown` (at least `MIN_HOLD_MS`), as an idle replica would, or once
 * no call can take it (`drop`: its app deleted, a later version current); `expired` hears of it
 * (the host drops the version's files unless it was made current meanwhile).
 */
import type { OutputLine, TrialAnswer } from "../../common/protocol/deploy.ts";
import { msSince } from "../runs/describe.ts";
import type { AppStats, PoolTarget } from "./pool.ts";
import { linesOf } from "./replica-output.ts";
import { isHostFailure, type Workload, WorkloadError } from "./workload.ts";

/**
 * Least time a started replica is held unclaimed: the control plane records the version and
 * tells the hosts in well under it, whatever the app's `cooldown` (which may be 0).
 */
export const MIN_HOLD_MS = 30_000;

/** Lines of a failed replica's output quoted, and characters of each. */
const QUOTED_LINES = 20;
const QUOTED_LINE_CHARS = 500;

/**
 * After a failed replica has exited, how long its last output may still be on its way through
 * its pipes (its exit can be seen before they are read to their end).
 */
const OUTPUT_SETTLE_MS = 100;

/** Why a managed app whose module loaded but exports no function is refused. */
const NO_FUNCTION =
  "the app exports no function: its module loaded, but a call runs a function it exports (export function run(input, ctx) {…} in main.mjs, exports.run = … in main.js)";

interface Held {
  workload: Workload;
  timer: NodeJS.Timeout;
  ms: number;
  target: PoolTarget;
  /** Stops it and forgets it; `expired` hears of its version. */
  drop: () => void;
}

const keyOf = (t: Pick<PoolTarget, "project" | "app" | "version" | "digest">) =>
  `${t.project}/${t.app}/${t.version}/${t.digest}`;

export class Trials {
  readonly #held = new Map<string, Held>();
  readonly #starting = new Map<string, Promise<TrialAnswer>>();
  /** The target each key was last asked to start with: the one `expired` hears of. */
  readonly #asked = new Map<string, PoolTarget>();
  #closed = false;

  constructor(
    private readonly create: (target: PoolTarget) => Workload,
    private readonly expired: (target: PoolTarget) => void = () => {},
  ) {}

  /** Starts a replica of `target` (one already held, or starting, answers for it). */
  start(target: PoolTarget): Promise<TrialAnswer> {
    const key = keyOf(target);
    this.#asked.set(key, target);
    const held = this.#held.get(key);
    if (held?.workload.accepting) return Promise.resolve(startedAnswer(held.workload, held.ms));
    let starting = this.#starting.get(key);
    if (!starting) {
      starting = this.#start(key, target).finally(() => this.#starting.delete(key));
      this.#starting.set(key, starting);
    }
    return starting;
  }

  /** The held replica of `target` (its version and files), for the pool to use; else undefined. */
  claim(target: PoolTarget): Workload | undefined {
    const key = keyOf(target);
    const held = this.#held.get(key);
    if (!held) return undefined;
    this.#held.delete(key);
    this.#asked.delete(key);
    clearTimeout(held.timer);
    return held.workload.accepting ? held.workload : undefined;
  }

  /**
   * `stats` (the pool's, for `GET /internal/metrics`) with each app's `held` replicas: right after
   * a deploy, `runlet apps show` said "0 idle" while the replica it started waited here.
   */
  withHeld(stats: AppStats[]): AppStats[] {
    const all = stats.map((a) => ({ ...a }));
    for (const { workload, target } of this.#held.values()) {
      if (!workload.accepting) continue;
      let app = all.find((a) => a.project === target.project && a.app === target.app);
      if (!app) {
        const { project, app: name, version } = target;
        app = { project, app: name, version, queued: 0, reserved: 0, replicas: [] };
        all.push(app);
      }
      app.held = (app.held ?? 0) + 1;
    }
    return all;
  }

  /**
   * Stops the replicas held of the app, of versions before `below` (all without it), as their
   * hold would have ended: the app was deleted, or a later version made current, and no call
   * can take them. Held on, they ran the app's code for its whole cooldown (up to a day).
   */
  drop(project: string, app: string, below = Number.POSITIVE_INFINITY): void {
    for (const held of [...this.#held.values()]) {
      const { target } = held;
      if (target.project === project && target.app === app && target.version < below) held.drop();
    }
  }

  /** Stops the replicas held; no trial starts from now on. */
  async close(): Promise<void> {
    this.#closed = true;
    const held = [...this.#held.values()];
    this.#held.clear();
    await Promise.all(
      held.map((h) => {
        clearTimeout(h.timer);
        return h.workload.stop();
      }),
    );
  }

  /**
   * A host that stops meanwhile gives no answer (it throws, `closing`): the replica did not fail,
   * the host did, and the control plane asks another.
   */
  async #start(key: string, target: PoolTarget): Promise<TrialAnswer> {
    if (this.#closed) throw new WorkloadError({ kind: "closing" });
    const began = performance.now();
    const workload = this.create(target);
    try {
      await workload.start();
      // Every call of a module that exports no function would be a 404: it is refused as one
      // that cannot start (before, it went live and each call failed "(it exports no function)").
      if (workload.kind === "function" && workload.exports?.length === 0)
        throw new Error(NO_FUNCTION);
    } catch (err) {
      await workload.stop();
      this.#asked.delete(key);
      if (this.#closed) throw new WorkloadError({ kind: "closing" });
      await new Promise((resolve) => setTimeout(resolve, OUTPUT_SETTLE_MS));
      // The host's own failure (its sandbox, the secrets, the files) is not the app's: the
      // control plane asks another host, rather than refuse the deploy for the app's fault.
      const fault = isHostFailure(err) ? "host" : "app";
      return {
        started: false,
        message: (err as Error).message,
        output: lastLines(workload),
        fault,
      };
    }
    const ms = Math.round(msSince(began));
    if (this.#closed) {
      await workload.stop();
      throw new WorkloadError({ kind: "closing" });
    }
    // Unused for the hold, or crashed meanwhile: it goes, and `expired` hears of its version.
    const drop = () => {
      if (this.#held.get(key)?.workload !== workload) return;
      clearTimeout(timer);
      this.#held.delete(key);
      void workload.stop();
      const latest = this.#asked.get(key) ?? target;
      this.#asked.delete(key);
      this.expired(latest);
    };
    const holdMs = Math.max(target.config.scaling.cooldown * 1000, MIN_HOLD_MS);
    const timer = setTimeout(drop, holdMs);
    timer.unref();
    this.#held.set(key, { workload, timer, ms, target, drop });
    workload.onExit(drop);
    return startedAnswer(workload, ms);
  }
}

/**
 * A started trial's answer: with a managed app's exports, so a deploy can say how to call a
 * function it has (its hint named `run` for a module without one, and that call was a 404).
 */
function startedAnswer(workload: Workload, ms: number): TrialAnswer {
  const exports = workload.kind === "function" ? workload.exports : undefined;
  return { started: true, ms, ...(exports ? { exports: [...exports] } : {}) };
}

/** The last lines a replica wrote (its empty ones left out), each cut to a bound. */
function lastLines(workload: Workload): OutputLine[] {
  return linesOf(workload.logs.chunks())
    .filter((line) => line.text.trim() !== "")
    .slice(-QUOTED_LINES)
    .map(({ stream, text }) => ({
      stream,
      text: text.length > QUOTED_LINE_CHARS ? `${text.slice(0, QUOTED_LINE_CHARS)}…` : text,
    }));
}
