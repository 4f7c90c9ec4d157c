import { readFile } from "node:fs/promises";
import { RunletError } from "runlet/client";
import { RUN_ID } from "../../common/ids.ts";
import { CliError, type Command } from "../command.ts";
import { loadConfig, tokenSource, waitingNotes } from "../config.ts";
import { connectionCut, cutMessage } from "../cut-off.ts";
import {
  answeredMessage,
  notTheRunApi,
  runApi,
  unreachable,
  unsignedNote,
  webhookSecret,
  webhookUrl,
} from "../run-api.ts";
import { readStdin } from "../stdin.ts";
import { madeRun, ranOnAHost } from "./run-made.ts";

/** A sync run's answer as the CLI prints it; `failure` says why it is not a success. */
interface Outcome {
  status: number;
  /** The answer's body: JSON, or the text of a body that is not. */
  body: unknown;
  runId?: string;
  failure?: string;
  /**
   * Runlet's own answer (`{message, code, run_id}`): true; the function's result: undefined; a
   * custom app's own answer: false.
   */
  runlets?: boolean;
  /** The first answer of its Idempotency-Key, given again: nothing ran for this call. */
  replayed?: boolean;
  /** What a success prints on stdout without --json: the result, the app's answer; or nothing. */
  shown?: string;
}

/**
 * What a replayed answer is, said on stderr: without it, the first call's answer (its result,
 * its failure, its run id) read as this call's, and a retry of a failed run with the same key
 * seemed to fail again at once, for 24 h.
 */
function replayNote(runId: string | undefined, async: boolean): string {
  const run = runId ?? "the first run";
  return async
    ? `Replayed: this Idempotency-Key was first sent with the same call, so this is that run, ${run}, not a new one (runlet status ${run}); a new key makes a new run.`
    : `Replayed: the answer of ${run}, from the first call with this Idempotency-Key; nothing ran again (a new key runs it again).`;
}

/**
 * The input `--data` gives: JSON itself, `@FILE` for a file's, `-` for standard input's (no JSON
 * text starts with either). An input of megabytes had no way in: one argument holds at most
 * 128 KiB on Linux (`--data "$(cat input.json)"` is "Argument list too long"). A blank one is
 * undefined: an empty body, which the run API takes as the input null (common/function-input.ts);
 * `--data ''` was refused as "not valid JSON".
 */
async function readInput(data: string | undefined): Promise<unknown> {
  const from = data === "-" ? "standard input" : data?.startsWith("@") ? data.slice(1) : undefined;
  let text = data ?? "{}";
  if (data === "-") text = await readStdin("the input as JSON");
  else if (from !== undefined)
    text = await readFile(from, "utf8").catch((err: NodeJS.ErrnoException) => {
      throw new CliError(`--data ${data}: cannot read ${from}: ${err.code ?? err.message}`);
    });
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    const what =
      from === undefined
        ? `is not valid JSON: ${text.slice(0, 200)}`
        : `${data}: ${from} is not valid JSON`;
    throw new CliError(`--data ${what} (${(err as Error).message})`);
  }
}

/** The body as the Worker sent it (its JSON is compact, as JSON.stringify writes it). */
function textOf(body: unknown): string {
  if (body === undefined) return "";
  return typeof body === "string" ? body : JSON.stringify(body);
}

/**
 * A custom app's own answer to `POST /{fn}`, which the Worker sends it as it came: the sync
 * result of that run (the spec: a sync call's answer is the function's output). A 2xx prints
 * the app's body as it wrote it (JSON pretty-printed as a result is) and exits 0; it read
 * "<app> is a custom app: its server answered POST /run itself (200), not with a function's
 * result", exit 1. --json: {run_id, status, result}, `result` the app's body as a webhook
 * delivery of a custom app's run holds it (JSON where it is, else its text; null for none).
 */
function customOutcome(err: RunletError, app: string, fn: string): Outcome {
  const result = err.body ?? null;
  const outcome: Outcome = {
    status: err.status,
    body: { run_id: err.runId, status: err.status, result },
    runId: err.runId,
    runlets: false,
    replayed: err.replayed,
  };
  if (err.status < 200 || err.status > 299)
    outcome.failure = `${app} is a custom app: its server answered POST /${fn} with ${err.status}: ${textOf(err.body).slice(0, 200)} (\`runlet run\` sends it POST /<function> with --data's JSON; send other methods and paths over HTTP: \`runlet deploy\` printed a curl)`;
  else if (typeof result === "string") outcome.shown = result.replace(/\n$/, "");
  else if (result !== null) outcome.shown = JSON.stringify(result, null, 2);
  return outcome;
}

export const run: Command = {
  name: "run",
  summary: "call a function of a deployed app through the worker",
  usage: `Usage: runlet run <app> [function] [--data JSON|@FILE|-] [--async] [--webhook URL]
                  [--webhook-secret S] [--idempotency-key KEY] [--json]

Calls POST {api_url}/v4/{project}/{app}/{function} (function defaults to "run") with the
JSON body given by --data (default: {}). Prints the function's result; --json prints the whole
response ({run_id, result, run_time_ms}; --async: {run_id}). A function whose status_code is
204, 205 or 304 is answered without a body: nothing is printed, and --json prints
{run_id, result: null, run_time_ms: null, status}. A custom app's server gets the request
itself (POST /{function}, --data's JSON): its answer is printed as it wrote it, and --json
prints {run_id, status, result} (result: its body, JSON where it is, else its text). An answer
outside 2xx exits 1.

  --data      the input: JSON ('{"name":"Ada"}'), @FILE for a file's JSON (@input.json), or -
              for standard input's; a large input needs one of those (an argument holds at most
              128 KiB), up to the run API's 10 MiB. An empty one (--data '', an empty file)
              sends an empty body: the function's input is null

  --async     run in the background: prints the run id at once (follow it with
              \`runlet status <run_id>\`, watch what it writes with \`runlet logs -f <run_id>\`,
              stop it with \`runlet cancel <run_id>\`)
  --webhook   also POST the response to this URL once the function has answered; signed
              with --webhook-secret, or RUNLET_WEBHOOK_SECRET when set (sent as
              X-Webhook-Secret; the variable keeps the secret out of \`ps\` and shell history);
              without either it goes unsigned, and a note says so
  --idempotency-key
              send the call again safely: the same key with the same call is the same run
              (an async run's id, a sync run's first answer) for 24 h (docs/api.md)`,
  options: {
    data: { type: "string", short: "d" },
    async: { type: "boolean" },
    webhook: { type: "string" },
    "webhook-secret": { type: "string" },
    "idempotency-key": { type: "string" },
  },
  async run({ values, positionals }) {
    const [app, fn = "run", ...extra] = positionals;
    if (!app) throw new CliError(`missing <app>\n\n${run.usage}`);
    // `modal run app.py`'s habit: a folder where an app's name goes was a 404 "not deployed".
    if (/[/\\]|^\.{1,2}$/.test(app))
      throw new CliError(
        `'${app}' is a path: runlet run takes a deployed app's name. Deploy the folder first (runlet deploy ${app}), then runlet run <its name>`,
      );
    if (extra.length)
      throw new CliError(
        `unexpected '${extra.join(" ")}': the input goes in --data\n\n${run.usage}`,
      );
    const webhook = webhookUrl(values.webhook);
    // A secret for no webhook was dropped without a word, and a webhook without a secret went
    // unsigned without one: its receiver cannot tell a delivery from Runlet from anyone's.
    if (typeof values["webhook-secret"] === "string" && webhook === undefined)
      throw new CliError(
        `--webhook-secret signs the delivery to --webhook: give --webhook URL too\n\n${run.usage}`,
      );
    const secret = webhookSecret(values["webhook-secret"]);
    if (webhook !== undefined && secret === undefined)
      console.error(unsignedNote("webhook delivery"));
    const input = await readInput(typeof values.data === "string" ? values.data : undefined);
    const config = await loadConfig();
    const options = {
      async: values.async === true,
      webhook,
      secret: secret && webhook !== undefined ? secret : undefined,
      idempotencyKey:
        typeof values["idempotency-key"] === "string" ? values["idempotency-key"] : undefined,
    };
    let outcome: Outcome;
    // A sync call is listed running once it has run a second (docs/api.md): where to see it.
    const listed = `runlet runs --app ${app} --status running lists it once it runs (its run id for runlet logs -f)`;
    // Ctrl-C while a sync call runs: the call goes on where it runs, which was left unsaid.
    const interrupted = () => {
      console.error(
        `runlet run: stopped waiting; the call goes on on its runtime host (a sync run cannot be cancelled): ${listed}, then with its end.`,
      );
      process.exit(130);
    };
    // A long call waited in silence (the run id comes with the answer).
    const waiting =
      options.async || values.json
        ? undefined
        : waitingNotes(
            5_000,
            30_000,
            // It may wait for a free replica first (all busy): "still running" said it ran.
            (s) =>
              `(${app}: no answer yet, ${s} s: it runs, or waits for a free replica; ${listed})`,
          );
    if (!options.async) process.once("SIGINT", interrupted);
    try {
      const ran = await runApi(config)
        .run(app, fn, input, options)
        .finally(() => waiting?.stop());
      if (!("result" in ran)) {
        console.log(values.json ? JSON.stringify({ run_id: ran.runId }) : ran.runId);
        if (ran.replayed) console.error(replayNote(ran.runId, true));
        else if (!values.json)
          console.error(
            `running in the background: runlet status ${ran.runId} (its lines as it writes them: runlet logs -f ${ran.runId})`,
          );
        return 0;
      }
      // A 204, 205 or 304 the function chose has no body (the client gives no result): printed
      // as {run_id} alone, its --json read as an async run's acceptance. It says its status.
      const noBody = ran.result === undefined && ran.runTimeMs === undefined;
      const body = noBody
        ? { run_id: ran.runId, result: null, run_time_ms: null, status: ran.status }
        : { run_id: ran.runId, result: ran.result, run_time_ms: ran.runTimeMs };
      const ok = ran.status >= 200 && ran.status < 300;
      // A result with its own status_code outside 2xx: the CLI says the run failed.
      const failure = ok ? undefined : textOf(body).slice(0, 200);
      outcome = { status: ran.status, body, runId: ran.runId, failure, replayed: ran.replayed };
      if (!noBody) outcome.shown = JSON.stringify(ran.result, null, 2);
    } catch (err) {
      if (!(err instanceof RunletError)) throw err;
      // Cut once sent: the run may have run, and may still (a sync run cannot be cancelled).
      if (err.code === "network_error" && connectionCut(err.cause))
        throw new CliError(
          cutMessage(
            "run",
            config.apiUrl,
            `the run may have started, and may still end: look for it with runlet runs --app ${app} before running it again (${options.idempotencyKey ? "the same --idempotency-key does not run it again" : "a call with --idempotency-key runs once however often it is sent"})`,
          ),
        );
      if (err.code === "network_error") throw unreachable("run", config);
      // Neither a run id in its body nor in X-Request-Id: no run API answered (run-api.ts).
      const elsewhere = notTheRunApi(err, config);
      if (elsewhere) throw new CliError(elsewhere);
      // Runlet's own answers on a run path carry the run id in their body; a custom app's own
      // answer to POST /{fn} does not (its X-Request-Id does).
      const { run_id: ownId } = (err.body ?? {}) as { run_id?: unknown };
      const appsOwn = err.status < 500 && typeof ownId !== "string";
      if (appsOwn) outcome = customOutcome(err, app, fn);
      else {
        const said = err.code === "function_error" ? err.message : answeredMessage(err);
        outcome = {
          status: err.status,
          body: err.body,
          runId: err.runId,
          failure: said ?? textOf(err.body).slice(0, 200),
          runlets: true,
          replayed: err.replayed,
        };
      }
    } finally {
      process.off("SIGINT", interrupted);
    }
    // A refusal (the run API's {message, code}) says its status too, as every --json failure.
    const { body } = outcome;
    const refused = typeof body === "object" && body !== null && "message" in body;
    if (values.json) console.log(textOf(refused ? { ...body, status: outcome.status } : body));
    else if (outcome.failure === undefined && outcome.shown !== undefined)
      console.log(outcome.shown);
    // A failure is said on stderr with --json too: the job's log shows why it stopped.
    if (outcome.failure !== undefined) {
      const whose = outcome.status === 401 ? ` (${tokenSource()})` : "";
      // A function that returned its own status_code ran, and its run is a success: "run
      // failed" sent its caller to `runlet status`, which said success.
      const what =
        outcome.runlets === false
          ? ""
          : outcome.runlets
            ? `run failed (${outcome.status}): `
            : `the function answered ${outcome.status}: `;
      console.error(`runlet run: ${what}${outcome.failure}${whose}`);
    }
    if (outcome.replayed) console.error(replayNote(outcome.runId, false));
    // Only a run's id (`run_…`): another id is no run's, for `runlet status` to find.
    else if (!values.json && RUN_ID.test(outcome.runId ?? "") && madeRun(outcome, app, fn)) {
      console.error(`run id: ${outcome.runId}`);
      // What it wrote, a thrown error's stack with it, is in its logs: said where to look.
      if (outcome.failure !== undefined && outcome.runlets !== false && ranOnAHost(outcome))
        console.error(`What it wrote: runlet logs ${outcome.runId}`);
    }
    return outcome.failure === undefined ? 0 : 1;
  },
};
