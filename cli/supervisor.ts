/**
 * The supervisor of `runlet start`: starts the components, restarts one that exits unexpectedly,
 * and stops them all in order.
 *
 * - Start: every component is started at once and must answer its health URL within the bound;
 *   one that exits or does not answer then fails the start (a bad setting or a taken port is
 *   not cured by starting again).
 * - Once ready, a component that exits by itself is restarted after a pause that doubles from
 *   250 ms to 5 s while it keeps failing (a component that ran a minute starts again from
 *   250 ms). Each restart is said on the terminal and written, with its count, to the
 *   component's log and to `supervisor.log` (rotated by size, as the components' logs are:
 *   log-files.ts). Its leftovers (its process group: workerd under
 *   wrangler) are killed first, so they free its port. Once it answers again, `restarted` is
 *   called (the Worker's wake-up).
 * - A component that exits 5 times within a minute stops everything: `run` resolves 1, with a
 *   message naming its log. One whose exit says it is for good (`forGood`: a runtime host the
 *   control plane refused) is not restarted, and the others run on.
 * - `stop` stops the components in their `stopOrder` (the runtime host first, while the Worker
 *   still takes the ends of its runs), each within its own grace, then SIGKILL. `hurry` tells
 *   the components being stopped again (SIGTERM): the runtime host's grace ends at once.
 */
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_LOG_LIMITS, LogFile, type LogLimits } from "./log-files.ts";
import { type Managed, signalGroup, stopProcess, waitHealthy } from "./processes.ts";

export interface ComponentSpec {
  /** The log file's name, and the process's. */
  name: string;
  /** How the terminal names it: "runtime host". */
  label: string;
  healthUrl: string;
  /** Starts a new process of it. */
  start(): Managed;
  /** How long it gets between SIGTERM and SIGKILL. */
  stopGraceMs: number;
  /** Lower stops first; equal ones together. */
  stopOrder: number;
  /** Called once it answers again after a restart. */
  restarted?(): Promise<void>;
  /**
   * Why an exit (`code 3`, `signal SIGKILL`) is for good, if it is: a start would fail the same
   * way. It is not restarted, and the others run on.
   */
  forGood?(how: string): string | undefined;
}

/** Exits of one component within `CRASH_WINDOW_MS` that stop everything. */
const MAX_CRASHES = 5;
const CRASH_WINDOW_MS = 60_000;
const FIRST_PAUSE_MS = 250;
const MAX_PAUSE_MS = 5_000;
/** A component that ran this long before it exited starts again from the first pause. */
const STABLE_MS = 60_000;

interface Component {
  spec: ComponentSpec;
  proc: Managed;
  /** When it exited unexpectedly, within the last CRASH_WINDOW_MS. */
  crashes: number[];
  /** Restarts in a row without a stable run (sets the pause). */
  streak: number;
  /** Restarts since `runlet start` began. */
  restarts: number;
}

export class Supervisor {
  readonly #components: Component[];
  #stopping: Promise<void> | undefined;
  #finish: (code: number) => void = () => {};
  readonly #finished = new Promise<number>((resolve) => {
    this.#finish = resolve;
  });
  /** Ends the pause before a restart once `runlet start` stops. */
  readonly #stopped = new AbortController();
  /** Aborted by `hurry`: the components being stopped are told again. */
  readonly #hurry = new AbortController();

  /** `supervisor.log`, opened when there is first something to say. */
  #log: LogFile | undefined;

  constructor(
    specs: ComponentSpec[],
    private readonly opts: { logDir: string; readyTimeoutMs: number; logLimits?: LogLimits },
  ) {
    this.#components = specs.map((spec) => ({
      spec,
      proc: spec.start(),
      crashes: [],
      streak: 0,
      restarts: 0,
    }));
  }

  logOf(name: string): string {
    return join(this.opts.logDir, `${name}.log`);
  }

  /** Waits for every component to answer; undefined when all do, else why not (all stopped). */
  async ready(): Promise<string | undefined> {
    const { readyTimeoutMs } = this.opts;
    const results = await Promise.all(
      this.#components.map((c) => waitHealthy(c.spec.healthUrl, c.proc, readyTimeoutMs)),
    );
    const failed = results.findIndex((r) => r !== "ready");
    if (failed === -1) {
      for (const component of this.#components) this.#watch(component, component.proc);
      return undefined;
    }
    const { spec, proc } = this.#components[failed] as Component;
    await this.stop();
    const why =
      results[failed] === "exited"
        ? "exited during start"
        : `did not answer within ${readyTimeoutMs / 1000} s`;
    return `the ${spec.label} ${why}. Its last lines (full log: ${this.logOf(spec.name)}):\n  ${proc.tail().slice(-12).join("\n  ")}`;
  }

  /** Resolves once everything has stopped: 0 after `stop`, 1 when a component kept crashing. */
  run(): Promise<number> {
    return this.#finished;
  }

  /** Stops every component, in order; once. */
  stop(): Promise<void> {
    this.#stopped.abort();
    this.#stopping ??= (async () => {
      const orders = [...new Set(this.#components.map((c) => c.spec.stopOrder))].sort(
        (a, b) => a - b,
      );
      for (const order of orders) {
        const now = this.#components.filter((c) => c.spec.stopOrder === order);
        await Promise.all(
          now.map((c) => stopProcess(c.proc, c.spec.stopGraceMs, this.#hurry.signal)),
        );
      }
      await this.#log?.end();
      this.#finish(0);
    })();
    return this.#stopping;
  }

  /** Stops everything (`stop`), and tells the components being stopped again: graces end. */
  hurry(): Promise<void> {
    this.#hurry.abort();
    return this.stop();
  }

  #watch(component: Component, proc: Managed): void {
    void proc.exited.then((how) => {
      if (this.#stopped.signal.aborted || component.proc !== proc) return;
      const why = component.spec.forGood?.(how);
      if (why === undefined) void this.#restart(component, how);
      else
        void this.#say(
          component,
          `runlet: the ${component.spec.label} stopped for good (${how}): ${why}. It is not started again; the rest of Runlet runs on.`,
        );
    });
  }

  async #restart(component: Component, how: string): Promise<void> {
    const { spec, proc } = component;
    const now = Date.now();
    component.crashes = [...component.crashes.filter((t) => now - t < CRASH_WINDOW_MS), now];
    // Its leftovers (wrangler's workerd) would hold its port.
    signalGroup(proc, "SIGKILL");
    proc.child.stdin?.destroy();
    const log = this.logOf(spec.name);
    if (component.crashes.length >= MAX_CRASHES) {
      this.#stopped.abort(); // no other restart begins meanwhile
      // Said before run() resolves: runlet start exits then, and the line must be in the log.
      await this.#say(
        component,
        `runlet: the ${spec.label} exited ${MAX_CRASHES} times within a minute (last: ${how}); stopping Runlet. Its log: ${log}\n  ${proc.tail().slice(-12).join("\n  ")}`,
      );
      this.#finish(1);
      await this.stop();
      return;
    }
    component.streak = now - proc.startedAt >= STABLE_MS ? 1 : component.streak + 1;
    component.restarts++;
    const pause = Math.min(FIRST_PAUSE_MS * 2 ** (component.streak - 1), MAX_PAUSE_MS);
    const count = component.restarts;
    await this.#say(
      component,
      `runlet: the ${spec.label} exited unexpectedly (${how}); restart ${count} in ${pause} ms (log: ${log})`,
    );
    await proc.log.end();
    if (!(await this.#pause(pause))) return;
    const fresh = spec.start();
    component.proc = fresh;
    this.#watch(component, fresh);
    const result = await waitHealthy(spec.healthUrl, fresh, this.opts.readyTimeoutMs);
    if (this.#stopped.signal.aborted || component.proc !== fresh) return;
    if (result === "timeout") {
      // Not answering is no better than gone: its exit brings the next restart.
      await this.#say(component, `runlet: the ${spec.label} did not answer after restart ${count}`);
      signalGroup(fresh, "SIGKILL");
      return;
    }
    if (result !== "ready") return; // it exited again: its watch restarts it
    await this.#say(component, `runlet: the ${spec.label} is back (restart ${count})`);
    await spec.restarted?.();
  }

  /** Waits `ms`; false if `runlet start` began to stop meanwhile. */
  #pause(ms: number): Promise<boolean> {
    return sleep(ms, true, { signal: this.#stopped.signal }).catch(() => false);
  }

  /** To the terminal, the component's log and the supervisor's; resolves once in both files. */
  async #say(component: Component, line: string): Promise<void> {
    console.error(line);
    const { log } = component.proc;
    this.#log ??= new LogFile(this.logOf("supervisor"), this.opts.logLimits ?? DEFAULT_LOG_LIMITS);
    log.writeLine(line); // each file stamps it with the time (log-files.ts)
    this.#log.writeLine(line);
    await Promise.all([log.flush(), this.#log.flush()]);
  }
}
