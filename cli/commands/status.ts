import { RunletError, type RunView } from "runlet/client";
import type { RunsNow } from "../../common/app-now.ts";
import { isEnded } from "../../common/protocol/runs.ts";
import { CliError, type Command, durationMs } from "../command.ts";
import { callProject, loadConfig } from "../config.ts";
import { atTerminal, confirmOrStop, YES_OPTION } from "../confirm.ts";
import { appOfRun, cliErrorOf, endedExitCode, indexedRun, runApi } from "../run-api.ts";
import { cancelQueued, type QueueCancelled } from "./cancel-queued.ts";

/**
 * `--wait`'s time up: said in the unit given (`--timeout 1s` read "after 1000 ms"), with the run
 * as it is now, read once more (undefined if that read failed), for --json: it printed only
 * `{message}`, and a script had to ask again what state the run was in.
 */
class NotEndedYet extends CliError {
  constructor(
    message: string,
    readonly run: RunView | undefined,
  ) {
    super(message);
  }
}

/** How long --wait waits: `given` as typed (10m unsaid), and in ms. */
interface Wait {
  ms: number;
  given: string;
}

/**
 * Reads (GET) or cancels (DELETE) the run through the run API; its app is `appName` when given,
 * else looked up in the runs index. `wait`: reads it until it has ended, that long at most.
 */
async function call(
  method: "GET" | "DELETE",
  runId: string | undefined,
  extra: string[],
  usage: string,
  wait?: Wait,
  appName?: string,
) {
  if (!runId || extra.length > 0) throw new CliError(`give one run id\n\n${usage}`);
  const config = await loadConfig();
  const app = appName ?? (await appOfRun(config, runId));
  const api = runApi(config);
  try {
    if (method === "DELETE") return await api.cancel(app, runId);
    if (wait === undefined) return await api.status(app, runId);
    // One read first, failing as without --wait: waitFor reads again past no answer at all, and
    // an address where nothing listens was said only after the whole --timeout (10 min), as a
    // run that "has not ended … it goes on". A busy or restarting Runlet (429, 5xx) is waited for.
    const first = await api.status(app, runId).catch((err: unknown) => {
      if (err instanceof RunletError && err.status >= 429) return undefined;
      throw err;
    });
    if (first && isEnded(first.status)) return first;
    return await api.waitFor(app, runId, { timeoutMs: wait.ms }).catch(async (err: unknown) => {
      if (!(err instanceof RunletError) || err.code !== "timeout") throw err;
      const now = await api.status(app, runId).catch(() => undefined);
      const said = err.message.replace(`after ${wait.ms} ms`, `after ${wait.given}`);
      throw new NotEndedYet(`${said}: it goes on`, now);
    });
  } catch (err) {
    if (err instanceof NotEndedYet) throw err;
    const reads = method === "GET";
    throw cliErrorOf(err, reads ? "status" : "cancel", config, { reads });
  }
}

/** `--timeout`: `90s`, `10m`, `2h`, `1d`. */
function timeoutMs(text: string): number {
  const ms = durationMs(text);
  if (ms === undefined || ms <= 0)
    throw new CliError(`--timeout must be a duration like 90s, 10m or 2h (got '${text}')`);
  return ms;
}

/** A run's view as lines for people. */
export function runLines(state: RunView): string[] {
  const lines = [
    `${state.run_id}  ${state.app} ${state.function}  ${state.async ? "async" : "sync"}`,
    `status    ${state.status}${state.error ? `: ${state.error.message}` : ""}`,
    // A custom app's run: how the app answered.
    ...(state.status_code !== undefined ? [`answered  ${state.status_code}`] : []),
    `created   ${state.created_at}`,
    // When it left the queue (the API's started_at): without it, a wait could not be told from work.
    `started   ${state.started_at ?? "-"}`,
    `finished  ${state.finished_at ?? "-"}${state.run_time_ms === null ? "" : `  (${state.run_time_ms} ms)`}`,
    // Where it went: a run "lost" by its host is looked into there (runlet hosts names it).
    ...(state.host ? [`host      ${state.host}`] : []),
  ];
  const { webhook } = state;
  // Once sent again (runlet redeliver), every delivery is listed, oldest first, numbered; each
  // says whether it was signed (only --json said it: a receiver's refusals of an unsigned one
  // read as its own fault).
  for (const delivery of webhook ? [...(webhook.earlier ?? []), webhook] : []) {
    const n = webhook?.delivery ? `delivery ${delivery.delivery ?? webhook.delivery}  ` : "";
    const signed = delivery.signed ? "signed" : "unsigned";
    lines.push(`webhook   ${n}${delivery.state}  ${signed}  ${delivery.target}`);
    for (const a of delivery.attempts)
      lines.push(`  attempt ${a.attempt}  ${a.at}  ${a.status ?? a.error}`);
  }
  return lines;
}

const STATUS_USAGE = `Usage: runlet status <run_id> [--app APP] [--wait [--timeout 10m]] [--json]

A run's state: queued, running, success, failure or cancelled, its times, its error, the
runtime host it went to (runlet hosts names it), and its webhook deliveries: each one's state,
whether it was signed (--webhook-secret) or unsigned, its target and its attempts. --json
prints the worker's answer (each delivery's "signed": true or false).

  --app       the run's app, as with runlet redeliver (default: looked up in the runs index
              by the run id); a run of another app is not found
  --wait      read the run again until it has ended (the pause growing from 0.25 s to 5 s),
              then show it; exits 0 if it ended success, 1 if failure or cancelled, so a
              script can wait on a background run: runlet status "$id" --wait && next-step
  --timeout   how long --wait waits at most (90s, 10m, 2h; default 10m): past it, exits 1
              saying the run has not ended (it goes on); --json: {message, run}, the run as
              it is now (null if it could not be read)`;

export const status: Command = {
  name: "status",
  summary: "show a run's state and its webhook deliveries",
  usage: STATUS_USAGE,
  options: { app: { type: "string" }, wait: { type: "boolean" }, timeout: { type: "string" } },
  async run({ values, positionals }) {
    const [runId, ...extra] = positionals;
    if (typeof values.timeout === "string" && values.wait !== true)
      throw new CliError("--timeout is how long --wait waits: give --wait too");
    const given = typeof values.timeout === "string" ? values.timeout : "10m";
    const wait = values.wait === true ? { ms: timeoutMs(given), given } : undefined;
    const app = typeof values.app === "string" ? values.app : undefined;
    let state: RunView;
    try {
      state = await call("GET", runId, extra, STATUS_USAGE, wait, app);
    } catch (err) {
      // --json: the run as it is now beside the message (the exit code is still 1).
      if (!(err instanceof NotEndedYet) || !values.json) throw err;
      console.log(JSON.stringify({ message: err.message, run: err.run ?? null }));
      console.error(`runlet status: ${err.message}`);
      return 1;
    }
    if (values.json) console.log(JSON.stringify(state));
    else console.log(runLines(state).join("\n"));
    // Waited on: how it ended is the exit code.
    return wait === undefined ? 0 : endedExitCode(state.status);
  },
};

const CANCEL_USAGE = `Usage: runlet cancel <run_id> [--app APP] [--yes] [--json]
       runlet cancel --app NAME --queued [--yes] [--json]

Cancels a queued or running async run: it ends cancelled (a queued one never starts, a
running one's ctx.signal aborts) and no webhook is delivered. A run that has ended cannot be
cancelled. --app: the run's app, as with runlet status (default: looked up in the runs index
by the run id).

--app NAME --queued cancels every run of the app still waiting in its queue (a burst sent by
mistake), with progress on stderr: each is cancelled only if still queued (onlyIfQueued), so
one that has started or ended by then is left alone. Runs accepted while it works may be left
queued: run it again. --json prints
{app, cancelled: [run ids], skipped: [run ids], started: [run ids]} (started: cancelled, but
begun that instant).

A cancel cannot be undone: on a terminal it asks first (default No), --yes (-y) answers yes. A
script (stdin or stdout not a terminal) is not asked.`;

export const cancel: Command = {
  name: "cancel",
  summary: "cancel a queued or running async run, or all of an app's queued runs",
  usage: CANCEL_USAGE,
  options: { app: { type: "string" }, queued: { type: "boolean" }, ...YES_OPTION },
  async run({ values, positionals }) {
    const app = typeof values.app === "string" ? values.app : undefined;
    // `<run_id> --app A` is one run of A, as status and redeliver take it (it was refused).
    if (values.queued || (app !== undefined && positionals.length === 0)) {
      if (app === undefined || !values.queued || positionals.length > 0)
        throw new CliError(`give a run id, or --app NAME with --queued\n\n${CANCEL_USAGE}`);
      const config = await loadConfig();
      // A person is asked, naming how many are queued; none queued is said, not asked about
      // (it asked "Cancel the 0 queued runs of hello?").
      if (atTerminal() && values.yes !== true) {
        const path = `/apps/${encodeURIComponent(app)}/replicas`;
        const { runs } = await callProject<{ runs?: RunsNow }>(
          config,
          "GET",
          path,
          "reading the app",
        );
        if (runs?.queued === 0) {
          const none: QueueCancelled = { app, cancelled: [], skipped: [], started: [] };
          console.log(
            values.json ? JSON.stringify(none) : `Nothing is queued for ${app}: nothing to cancel.`,
          );
          return 0;
        }
        const one = runs?.queued === 1;
        const count = runs ? `the ${runs.queued} queued run${one ? "" : "s"}` : "every queued run";
        await confirmOrStop(
          `Cancel ${count} of ${app}? Each ends cancelled and never starts; no webhook is delivered. Runs already running are left alone.`,
          `Kept ${app}'s queue: nothing was cancelled`,
          values.yes,
        );
      }
      const done = await cancelQueued(config, app, (n, of) =>
        console.error(`cancelling ${app}'s queued runs: ${n} of ${of}…`),
      );
      if (values.json) console.log(JSON.stringify(done));
      else {
        const left = done.skipped.length;
        console.log(
          `Cancelled ${done.cancelled.length} queued ${done.cancelled.length === 1 ? "run" : "runs"} of ${app}.${left ? ` ${left} had started or ended meanwhile and were left alone.` : ""}`,
        );
        // Said, not silent: a run the user meant to leave running was stopped.
        if (done.started.length > 0)
          console.error(
            `${done.started.length} of them had started as they were cancelled (${done.started.join(", ")}): their host began them that instant, or the run API is older than this CLI and cancels running runs too.`,
          );
      }
      return 0;
    }
    const [runId, ...extra] = positionals;
    if (runId && extra.length === 0)
      await confirmOrStop(
        // Looked up first: a sync run, an ended one or an unknown id was asked of, and only after
        // a yes refused; the question named no app or function.
        async () => {
          const run = await indexedRun(await loadConfig(), runId);
          if (!run.async) throw new CliError("only async runs can be cancelled");
          if (isEnded(run.status))
            throw new CliError(`run '${runId}' has already ended: ${run.status}`);
          return `Cancel run ${runId} of ${run.app} (${run.function}, ${run.status})? It ends cancelled for good: a queued run never starts, a running one's ctx.signal aborts; no webhook is delivered.`;
        },
        `Kept ${runId}: nothing was cancelled`,
        values.yes,
      );
    const state = await call("DELETE", runId, extra, CANCEL_USAGE, undefined, app);
    if (values.json) console.log(JSON.stringify(state));
    else {
      console.log(`Cancelled ${state.run_id}.`);
      // Said, not left to the docs: cancelling stops nothing a function does not let stop.
      if (state.started_at)
        console.error(
          "It had started: its ctx.signal aborted, and its code that does not listen to it runs on to its end on its replica (no webhook is sent).",
        );
    }
    return 0;
  },
};
