/**
 * How long the host keeps an async run's state once it ended (async-runs.ts): an hour while the
 * Worker may not have its end (its callback was lost: the Worker's watchdog asks for it); once
 * the Worker has it (the submitter's answer carried it, the callback was taken, or the Worker
 * cancelled the run), 5 minutes — a hand-over of the run still on its way is then answered
 * with the run rather than run again — and without the result the callback carried. Holding
 * every result for an hour (up to 10 MiB each) made the host's memory grow with the rate and
 * the size of async results.
 */
import type { HostRun } from "../../common/protocol/host.ts";

const KEEP_UNTOLD_MS = 60 * 60_000;
const KEEP_TOLD_MS = 5 * 60_000;

/** An ended run as the host keeps it, and when it is forgotten. */
export interface KeptRun {
  run: HostRun;
  forgetTimer?: NodeJS.Timeout;
}

/** The run ended: `forget` is called once it is kept long enough (`told`: the Worker has it). */
export function keepEnded(kept: KeptRun, told: boolean, forget: () => void): void {
  keepFor(kept, told ? KEEP_TOLD_MS : KEEP_UNTOLD_MS, forget);
}

/** The Worker took the run's end from its callback: nothing reads its result here any more. */
export function takenByWorker(kept: KeptRun, forget: () => void): void {
  delete kept.run.result;
  delete kept.run.http;
  keepFor(kept, KEEP_TOLD_MS, forget);
}

/** Forgets the run `ms` from now, instead of when it was to be. */
function keepFor(kept: KeptRun, ms: number, forget: () => void): void {
  clearTimeout(kept.forgetTimer);
  kept.forgetTimer = setTimeout(forget, ms).unref();
}
