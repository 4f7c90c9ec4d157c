/**
 * Everything each app's replicas wrote, as a container's log: a custom app's server, a managed
 * app's module load, its timers, and its runs' lines too (which their runs' logs have as well).
 * Each replica's ring keeps its newest 256 KiB. The replicas running now, and the last few that
 * ended, so that the last words of a crash can still be read: at most `ENDED_KEPT` per app, and
 * at most `endedKept` over the host (the limits' `endedOutputs`), so what the host holds does not
 * grow with the number of apps it ever ran.
 */
import type { ReplicaOutput } from "../../common/protocol/host.ts";
import { appKey } from "../names.ts";
import type { LogChunk, LogStream } from "./log-ring.ts";
import type { Workload } from "./workload.ts";

/** Replicas that ended, kept per app for their output; older ones are forgotten. */
export const ENDED_KEPT = 3;

interface Tracked {
  key: string;
  workload: Workload;
  startedAt: number;
  endedAt?: number;
}

export class ReplicaOutputs {
  readonly #apps = new Map<string, Tracked[]>();
  /** The ended replicas kept, over every app, the earliest ended first. */
  #ended: Tracked[] = [];

  constructor(readonly endedKept: number) {}

  /** Keeps `workload`'s output readable while it runs, and after it ended (the last few). */
  track<W extends Workload>(workload: W): W {
    const key = appKey(workload.spec.project, workload.spec.app);
    const tracked: Tracked = { key, workload, startedAt: Date.now() };
    this.#apps.set(key, [...(this.#apps.get(key) ?? []), tracked]);
    workload.onExit(() => {
      tracked.endedAt = Date.now();
      if (this.#apps.get(key)?.includes(tracked)) this.#ended.push(tracked);
      const ended = this.#ended.filter((t) => t.key === key);
      for (const old of ended.slice(0, Math.max(0, ended.length - ENDED_KEPT))) this.#drop(old);
      // Over the host's bound: the earliest ended of an app that keeps a later one goes first,
      // so each app's last words stay longest; when every app keeps one, the earliest of all.
      while (this.#ended.length > this.endedKept) {
        const counts = new Map<string, number>();
        for (const t of this.#ended) counts.set(t.key, (counts.get(t.key) ?? 0) + 1);
        const first = this.#ended.find((t) => (counts.get(t.key) ?? 0) > 1) ?? this.#ended[0];
        if (first) this.#drop(first);
      }
    });
    return workload;
  }

  #drop(tracked: Tracked): void {
    this.#ended = this.#ended.filter((t) => t !== tracked);
    const kept = (this.#apps.get(tracked.key) ?? []).filter((t) => t !== tracked);
    if (kept.length > 0) this.#apps.set(tracked.key, kept);
    else this.#apps.delete(tracked.key);
  }

  /**
   * The app is gone: its replicas' output goes too (the last few of every app ever removed were
   * kept for as long as the host ran, up to 256 KiB each, and showed in a later app of its name).
   */
  forget(project: string, app: string): void {
    const key = appKey(project, app);
    this.#apps.delete(key);
    this.#ended = this.#ended.filter((t) => t.key !== key);
  }

  /** The app's replicas here, the newest first, each with its output as lines. */
  of(project: string, app: string): ReplicaOutput["replicas"] {
    return (this.#apps.get(appKey(project, app)) ?? []).toReversed().map((t) => ({
      pid: t.workload.pid ?? null,
      version: t.workload.spec.version,
      state: t.endedAt !== undefined ? "exited" : t.workload.accepting ? "running" : "stopping",
      startedAt: new Date(t.startedAt).toISOString(),
      endedAt: t.endedAt === undefined ? null : new Date(t.endedAt).toISOString(),
      exit: t.endedAt === undefined ? null : (t.workload.exitStatus ?? null),
      dropped: t.workload.logs.dropped,
      lines: linesOf(t.workload.logs.chunks()),
    }));
  }
}

/**
 * Chunks as lines: each line timed by the chunk its first character came in; a stream's text
 * after its last newline is a line of its own at the end.
 */
export function linesOf(chunks: readonly LogChunk[]): ReplicaOutput["replicas"][number]["lines"] {
  const lines: Array<{ at: number; stream: LogStream; text: string }> = [];
  const partial: Partial<Record<LogStream, { at: number; text: string }>> = {};
  for (const { stream, at, data } of chunks) {
    const parts = data.toString("utf8").split("\n");
    const last = parts.pop() as string;
    for (const part of parts) {
      const open = partial[stream];
      lines.push({ at: open?.at ?? at, stream, text: (open?.text ?? "") + part });
      partial[stream] = undefined;
    }
    if (last !== "") {
      const open = partial[stream];
      partial[stream] = { at: open?.at ?? at, text: (open?.text ?? "") + last };
    }
  }
  for (const open of Object.entries(partial))
    if (open[1]) lines.push({ at: open[1].at, stream: open[0] as LogStream, text: open[1].text });
  return lines.map(({ at, stream, text }) => ({ time: new Date(at).toISOString(), stream, text }));
}
