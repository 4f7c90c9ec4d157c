/**
 * Everything each app's replicas wrote, as a container's log: a custom app's server, a managed
 * app's module load, its timers, and its runs' lines too (which their runs' logs have as well).
 * Each replica's ring keeps its newest 256 KiB. The replicas running now, and the last few that
 * ended, so that the last words of a crash can still be read.
 */
import type { ReplicaOutput } from "../../common/protocol/host.ts";
import { appKey } from "../names.ts";
import type { LogChunk, LogStream } from "./log-ring.ts";
import type { Workload } from "./workload.ts";

/** Replicas that ended, kept per app for their output; older ones are forgotten. */
export const ENDED_KEPT = 3;

interface Tracked {
  workload: Workload;
  startedAt: number;
  endedAt?: number;
}

export class ReplicaOutputs {
  readonly #apps = new Map<string, Tracked[]>();

  /** Keeps `workload`'s output readable while it runs, and after it ended (the last few). */
  track<W extends Workload>(workload: W): W {
    const key = appKey(workload.spec.project, workload.spec.app);
    const tracked: Tracked = { workload, startedAt: Date.now() };
    this.#apps.set(key, [...(this.#apps.get(key) ?? []), tracked]);
    workload.onExit(() => {
      tracked.endedAt = Date.now();
      const list = this.#apps.get(key) ?? [];
      const ended = list.filter((t) => t.endedAt !== undefined);
      const forget = new Set(ended.slice(0, Math.max(0, ended.length - ENDED_KEPT)));
      const kept = list.filter((t) => !forget.has(t));
      if (kept.length > 0) this.#apps.set(key, kept);
      else this.#apps.delete(key);
    });
    return workload;
  }

  /**
   * The app is gone: its replicas' output goes too (the last few of every app ever removed were
   * kept for as long as the host ran, up to 256 KiB each, and showed in a later app of its name).
   */
  forget(project: string, app: string): void {
    this.#apps.delete(appKey(project, app));
  }

  /** The app's replicas here, the newest first, each with its output as lines. */
  of(project: string, app: string): ReplicaOutput["replicas"] {
    return (this.#apps.get(appKey(project, app)) ?? []).toReversed().map((t) => ({
      pid: t.workload.pid ?? null,
      version: t.workload.spec.version,
      state: t.endedAt !== undefined ? "exited" : t.workload.accepting ? "running" : "stopping",
      startedAt: new Date(t.startedAt).toISOString(),
      endedAt: t.endedAt === undefined ? null : new Date(t.endedAt).toISOString(),
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
