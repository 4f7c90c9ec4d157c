/**
 * Sorts one managed replica's output between the logs of its runs and its own log. The shim
 * sends what a call writes as `log` messages naming the run; the replica keeps everything in
 * its own ring as well. What the process writes outside any call (module load, timers after a
 * call returned, processes it spawned, Node's own fatal-error report) arrives on its stdout and
 * stderr, belongs to no run, and stays the replica's.
 *
 * One exception, for the last words of a crash: when the process ends while calls are in flight,
 * each of their runs gets the replica's own output that reached the host since the run began
 * (where Node's report of an uncaught exception lands) and a line saying how the process ended.
 */

import { exitOf } from "../../common/exit-status.ts";
import { LogRing, type LogStream } from "./log-ring.ts";
import type { LogMessage } from "./messages.ts";
import type { ExitStatus } from "./replica-process.ts";
import type { RunLogStore, RunOwner } from "./run-logs.ts";

/** V8's report of a heap that reached its limit. */
const OUT_OF_MEMORY = /JavaScript heap out of memory|Fatal (?:JavaScript|process) out of memory/;

/** How a replica's process ended: its status, and whether the host stopped it (and why). */
export interface ProcessEnd {
  status: ExitStatus;
  stopping: boolean;
  /** It was killed because a call on it ran past this limit (seconds). */
  stoppedFor: number | undefined;
}

interface CallInFlight {
  runId: string;
  /** How many bytes of its own output the process had sent when the call was sent. */
  since: number;
}

export class RunOutput {
  /** Calls sent whose result has not come back, by call id. */
  readonly #calls = new Map<string, CallInFlight>();
  /** The process's own output only, for a crash's last words. */
  readonly #own: LogRing;

  constructor(
    private readonly store: RunLogStore,
    /** The replica's log: everything the process wrote, the runs' output included. */
    private readonly ring: LogRing,
  ) {
    this.#own = new LogRing(store.limits.bytesPerRun);
  }

  /** The call `callId` of run `runId` is being sent to the process. */
  begin(callId: string, runId: string, owner: RunOwner): void {
    this.store.open(runId, owner);
    this.#calls.set(callId, { runId, since: this.#ownBytes() });
  }

  /** The call's result came back: its run has written all it will (its logs came first). */
  end(callId: string): void {
    const call = this.#calls.get(callId);
    if (!call) return;
    this.#calls.delete(callId);
    if (!this.#inFlight(call.runId)) this.store.flush(call.runId);
  }

  /** A `log` message of the shim: each entry kept for its run if that run is in flight here. */
  log(msg: LogMessage): void {
    for (const { runId, stream, text, at } of msg.entries) {
      this.ring.append(stream, Buffer.from(text));
      // The app's code can send messages too: it may only write to runs it is running.
      if (this.#inFlight(runId)) this.store.write(runId, stream, text, at);
    }
  }

  /** What the process wrote to its stdout or stderr itself, as read (cut anywhere). */
  own(stream: LogStream, data: Buffer): void {
    this.ring.read(stream, data);
    this.#own.read(stream, data);
  }

  /**
   * The process has ended and its output is read: the runs still in flight get its last words
   * and a line saying how it ended. Later messages belong to no run.
   */
  processEnded(end: ProcessEnd): void {
    this.ring.endReads();
    this.#own.endReads();
    const how = exitOf(end.status);
    const reason =
      end.stoppedFor !== undefined
        ? `the replica was stopped (${how}) because a run on it ran past its ${end.stoppedFor} s limit`
        : end.stopping
          ? `the replica was stopped (${how}) before this run finished`
          : this.outOfMemory
            ? `the function's process ran out of memory and ended (${how}) before this run finished`
            : `the function's process exited (${how}) before this run finished`;
    const runs = new Map<string, number>();
    for (const { runId, since } of this.#calls.values()) {
      runs.set(runId, Math.min(since, runs.get(runId) ?? since));
    }
    this.#calls.clear();
    const chunks = this.#own.chunks();
    for (const [runId, since] of runs) {
      this.store.flush(runId);
      // The ring holds the bytes from offset `dropped` on.
      let offset = this.#own.dropped;
      for (const chunk of chunks) {
        const end = offset + chunk.data.length;
        if (end > since) {
          const data = chunk.data.subarray(Math.max(0, since - offset));
          this.store.write(runId, chunk.stream, data.toString(), chunk.at);
        }
        offset = end;
      }
      this.store.flush(runId);
      this.store.write(runId, "stderr", `runlet: ${reason}\n`);
    }
  }

  /** Whether the process wrote V8's report of a heap at its limit (Node then aborts). */
  get outOfMemory(): boolean {
    return OUT_OF_MEMORY.test(this.#own.text().slice(-16 * 1024));
  }

  /** Bytes of its own output the process has sent so far. */
  #ownBytes(): number {
    return this.#own.dropped + this.#own.size;
  }

  #inFlight(runId: string): boolean {
    for (const call of this.#calls.values()) if (call.runId === runId) return true;
    return false;
  }
}
