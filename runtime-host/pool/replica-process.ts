/**
 * The process of a replica, of either runtime. It is spawned `detached`, so it leads a process
 * group holding everything the app spawns: signals go to the whole group, and once the process
 * has exited what is left of its group is killed. Stopping is SIGTERM, then SIGKILL after a
 * grace period. In a sandbox the SIGTERM spares the sandbox's own processes (process-group.ts).
 */
import type { ChildProcess } from "node:child_process";
import { signalMembers } from "./process-group.ts";

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class ReplicaProcess {
  #child: ChildProcess | undefined;
  /** The sandbox's own processes in the group, by name: a SIGTERM passes them by. */
  #sandboxed: readonly string[] = [];
  #exited = false;
  #stopping = false;
  #status: ExitStatus = { code: null, signal: null };
  #stopTimer: NodeJS.Timeout | undefined;
  readonly #listeners: Array<() => void> = [];
  #markGone: () => void = () => {};
  readonly #gone = new Promise<void>((resolve) => {
    this.#markGone = resolve;
  });

  /** `ending` runs first when the process has exited: the replica settles what it had going. */
  constructor(private readonly ending: (status: ExitStatus) => void = () => {}) {}

  /**
   * Follows `child`, spawned `detached`; one stopped while it was being spawned is killed.
   * `sandboxed`: the names of its sandbox's own processes (`Wrapped.ownProcesses`).
   */
  attach(child: ChildProcess, sandboxed: readonly string[] = []): void {
    this.#child = child;
    this.#sandboxed = sandboxed;
    child.on("exit", (code, signal) => this.exitedWith(code, signal));
    if (this.#stopping) this.signal("SIGKILL");
  }

  get child(): ChildProcess | undefined {
    return this.#child;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get exited(): boolean {
    return this.#exited;
  }

  /** Set once `stop()` (or `abandon()`) was called: the replica takes no more work. */
  get stopping(): boolean {
    return this.#stopping;
  }

  get status(): ExitStatus {
    return this.#status;
  }

  /** How it ended, once it has (for a replica's output); undefined while it runs. */
  get exitStatus(): ExitStatus | undefined {
    return this.#exited ? this.#status : undefined;
  }

  onExit(listener: () => void): void {
    if (this.#exited) queueMicrotask(listener);
    else this.#listeners.push(listener);
  }

  /** Whether the process has exited, or does within `ms`. */
  exitsWithin(ms: number): Promise<boolean> {
    if (this.#exited) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.onExit(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** SIGTERM now, SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs: number): Promise<void> {
    if (!this.#child || this.#exited) {
      // One that exited by itself was not stopped: its runs' last line says it exited.
      if (!this.#exited) this.#stopping = true;
      return Promise.resolve();
    }
    if (!this.#stopping) {
      this.#stopping = true;
      this.#terminate();
      this.#stopTimer = setTimeout(() => this.signal("SIGKILL"), graceMs);
    }
    return this.#gone;
  }

  /** Takes no more work and kills the process now (something on it broke). */
  abandon(): void {
    this.#stopping = true;
    this.signal("SIGKILL");
  }

  /** Signals the process group (the process alone if it leads none); nothing once it exited. */
  signal(signal: NodeJS.Signals): void {
    if (this.#exited || this.#signalGroup(signal)) return;
    try {
      this.#child?.kill(signal);
    } catch {
      // Already gone: its exit event follows.
    }
  }

  /** The process has exited (both null: it never started). */
  exitedWith(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#exited) return;
    this.#exited = true;
    this.#status = { code, signal };
    clearTimeout(this.#stopTimer);
    this.ending(this.#status);
    this.#signalGroup("SIGKILL"); // whatever the app spawned lives in its group: end it too
    this.#markGone();
    for (const listener of this.#listeners.splice(0)) listener();
  }

  /**
   * SIGTERM to the app's processes: the whole group, or in a sandbox every process of the group
   * but the sandbox's own, which end the sandbox as they go (the app then exits in its grace, or
   * is killed with the group after it).
   */
  #terminate(): void {
    const pid = this.#child?.pid;
    if (this.#sandboxed.length > 0 && pid !== undefined && !this.#exited) {
      if (signalMembers(pid, "SIGTERM", this.#sandboxed)) return;
    }
    this.signal("SIGTERM");
  }

  /** Signals the process group; false if there is none (any more). */
  #signalGroup(signal: NodeJS.Signals): boolean {
    const pid = this.#child?.pid;
    if (pid === undefined) return false;
    try {
      process.kill(-pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}
