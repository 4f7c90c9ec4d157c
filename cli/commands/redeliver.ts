import type { RunView } from "runlet/client";
import { CliError, type Command } from "../command.ts";
import { loadConfig } from "../config.ts";
import { fetchPages } from "../pages.ts";
import {
  appOfRun,
  cliErrorOf,
  runApi,
  unsignedNote,
  webhookSecret,
  webhookUrl,
} from "../run-api.ts";
import { mustBeKnownApp } from "./runs.ts";

const USAGE = `Usage: runlet redeliver <run_id> [--app APP] [--webhook URL] [--webhook-secret S]
                        [--json]
       runlet redeliver --failed [--app APP] [--webhook URL] [--webhook-secret S]

Delivers an ended run's outcome to its webhook again (POST {api_url}/v4/{project}/{app}/runs/
{run_id}/deliveries), with the same retries as the first delivery. Follow its attempts with
\`runlet status <run_id>\`. --json prints the worker's answer (the run, its delivery under way).

  --app       the run's app (default: looked up in the runs index by the run id)
  --webhook   deliver to this URL instead of the run's own webhook
  --failed    every run of the project (or of --app) whose latest delivery failed, as the runs
              index says (\`runlet runs --webhook failed\`), each sent again once, 8 at a time

The delivery is signed with --webhook-secret, or RUNLET_WEBHOOK_SECRET when set (sent as
X-Webhook-Secret; the variable keeps it out of \`ps\`): the secret of the run call is not kept.
Without either it goes unsigned, and a note says so. Refused (409) while a delivery of the run is under way,
for a run that has not ended, and for a run that had no webhook.`;

export const redeliver: Command = {
  name: "redeliver",
  summary: "deliver a run's outcome to its webhook again",
  usage: USAGE,
  options: {
    app: { type: "string" },
    webhook: { type: "string" },
    "webhook-secret": { type: "string" },
    failed: { type: "boolean" },
  },
  async run({ values, positionals }) {
    if (values.failed === true) {
      if (positionals.length > 0)
        throw new CliError(`give run ids or --failed, not both\n\n${USAGE}`);
      return redeliverFailed(values);
    }
    const [runId, ...extra] = positionals;
    if (!runId || extra.length > 0) throw new CliError(`give one run id\n\n${USAGE}`);
    const webhook = webhookUrl(values.webhook);
    const secret = webhookSecret(values["webhook-secret"]);
    const config = await loadConfig();
    const app = typeof values.app === "string" ? values.app : await appOfRun(config, runId);
    let view: RunView;
    try {
      view = await runApi(config).redeliver(app, runId, { webhook, secret });
    } catch (err) {
      throw cliErrorOf(err, "redeliver", config);
    }
    unsignedSaid(secret);
    if (values.json) console.log(JSON.stringify(view));
    else {
      console.log(
        `Delivering ${view.run_id} again${view.webhook ? ` to ${view.webhook.target}` : ""}.`,
      );
      console.error(`\`runlet status ${view.run_id}\` shows its attempts.`);
    }
    return 0;
  },
};

/**
 * Without a secret, a note on stderr says the redelivery went unsigned, as `run --webhook` says
 * it (it went out unsigned without a word). Said once one went: before the run API's answer it
 * came ahead of refusals of redeliveries that never went (an unknown run, one without a webhook).
 */
function unsignedSaid(secret: string | undefined): void {
  if (secret === undefined) console.error(unsignedNote("redelivery"));
}

/** Runs sent again at once by `--failed`. */
const AT_ONCE = 8;

/** `--failed`: every run the runs index shows with a failed delivery, sent again. */
async function redeliverFailed(values: Record<string, unknown>): Promise<number> {
  // A URL the run API refuses: refused once, not for every run in turn.
  const webhook = webhookUrl(values.webhook);
  const secret = webhookSecret(values["webhook-secret"]);
  const config = await loadConfig();
  const query = new URLSearchParams({ webhook: "failed", limit: "200" });
  if (typeof values.app === "string") query.set("app", values.app);
  const { items } = await fetchPages<{ id: string; app: string }, "runs">(
    config,
    "/runs",
    "runs",
    query,
    { all: true, what: "listing the runs to deliver again" },
  );
  // A mistyped --app matched nothing and read "No run of 'x' has a failed delivery.", exit 0,
  // as `runs --app` did: the same 404, unless the index keeps runs of that name.
  if (items.length === 0 && typeof values.app === "string")
    await mustBeKnownApp(config, values.app, true);
  const api = runApi(config);
  const refused: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const run = items[next++] as { id: string; app: string };
      try {
        await api.redeliver(run.app, run.id, { webhook, secret });
      } catch (err) {
        const why = cliErrorOf(err, "redeliver", config);
        refused.push(`${run.id}: ${why instanceof Error ? why.message : String(why)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, worker));
  const sent = items.length - refused.length;
  if (sent > 0) unsignedSaid(secret); // none sent, nothing to sign: no note then
  if (values.json) console.log(JSON.stringify({ redelivered: sent, refused }));
  else if (items.length === 0) {
    // Nothing to do is a note, as an empty list's is: standard output stays empty.
    const of = typeof values.app === "string" ? ` of '${values.app}'` : "";
    console.error(`No run${of} has a failed delivery.`);
  } else {
    // What it did, on stdout as `redeliver <run_id>`'s; what to do next on stderr.
    console.log(`Delivering ${sent} of ${items.length} run(s) again.`);
    console.error("`runlet runs --webhook failed` lists those whose delivery fails again.");
  }
  // Said on stderr with --json too: the job's log shows why it exits 1.
  for (const line of refused) console.error(`  not sent: ${line}`);
  return refused.length > 0 ? 1 : 0;
}
