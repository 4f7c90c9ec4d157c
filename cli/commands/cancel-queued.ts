/**
 * `runlet cancel --app NAME --queued`: cancels every async run of the app still waiting in its
 * queue, as `runlet cancel` would one by one (a user who submitted a burst by mistake: RunPod's
 * purge-queue). The queued runs are read from the runs index first, then each is cancelled with
 * `?onlyIfQueued=true`: one that started or ended meanwhile is refused (409) and left alone. (It
 * read each run first and cancelled it if still queued: one that started between the two requests
 * was cancelled running.)
 */
import { CliError } from "../command.ts";
import { type CliConfig, callProject } from "../config.ts";
import { cliErrorOf, runApi } from "../run-api.ts";

/** The most runs an app may have queued (docs/api.md): the list stops there. */
const MOST = 100_000;
/** Cancels sent at once. */
const AT_ONCE = 8;

export interface QueueCancelled {
  app: string;
  /** The runs cancelled, and those left alone because they had started or ended meanwhile. */
  cancelled: string[];
  skipped: string[];
  /**
   * Of `cancelled`, those that had begun all the same: their host started them in the instant
   * of the cancel (docs/api.md), or the run API, older than this CLI, ignored `onlyIfQueued`.
   */
  started: string[];
}

async function queuedRuns(config: CliConfig, app: string): Promise<string[]> {
  // An app that is not deployed has no queue: its name mistyped read "Cancelled 0 queued runs".
  await callProject(config, "GET", `/apps/${encodeURIComponent(app)}`, "reading the app");
  const ids: string[] = [];
  let next: string | undefined;
  do {
    const query = new URLSearchParams({ app, status: "queued", limit: "200" });
    if (next) query.set("nextToken", next);
    const page = await callProject<{
      runs: Array<{ id: string; async: boolean }>;
      nextPageToken?: string;
    }>(config, "GET", `/runs?${query}`, "listing the app's queued runs");
    ids.push(...page.runs.filter((r) => r.async).map((r) => r.id));
    next = page.nextPageToken;
  } while (next && ids.length < MOST);
  return ids;
}

/** Cancels the app's queued runs; `progress` hears how far it is (once a second at most). */
export async function cancelQueued(
  config: CliConfig,
  app: string,
  progress: (done: number, of: number) => void,
): Promise<QueueCancelled> {
  const ids = await queuedRuns(config, app);
  const api = runApi(config);
  const result: QueueCancelled = { app, cancelled: [], skipped: [], started: [] };
  let next = 0;
  let told = Date.now();
  let failure: unknown;
  const one = async (id: string) => {
    try {
      const view = await api.cancel(app, id, { onlyIfQueued: true });
      result.cancelled.push(id);
      if (view.started_at !== null) result.started.push(id);
    } catch (err) {
      // Started or ended (409) since the list was read: left alone. Anything else stops the work.
      const status = (err as { status?: number }).status;
      if (status === 409) return result.skipped.push(id);
      failure ??= err;
    }
  };
  const worker = async () => {
    while (next < ids.length && failure === undefined) {
      await one(ids[next++] as string);
      if (Date.now() - told >= 1_000) {
        told = Date.now();
        progress(result.cancelled.length + result.skipped.length, ids.length);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, ids.length) }, worker));
  if (failure !== undefined)
    throw stoppedPartWay(cliErrorOf(failure, "cancel", config), result, ids);
  return result;
}

/**
 * The error that stopped the work, with how far it got: it said only the error, and a user who
 * had 10,000 runs queued could not tell whether any was cancelled.
 */
function stoppedPartWay(err: unknown, done: QueueCancelled, ids: string[]): unknown {
  if (!(err instanceof CliError)) return err;
  const { cancelled, skipped } = done;
  const part = `stopped after cancelling ${cancelled.length} of the ${ids.length} queued runs (${skipped.length} had started or ended): run it again to cancel the rest`;
  return new CliError(`${err.message}; ${part}`, err.answer, err.said);
}
