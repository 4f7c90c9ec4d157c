import type { RunView } from "runlet/client";
import { CliError, type Command } from "../command.ts";
import { loadConfig } from "../config.ts";
import { appOfRun, cliErrorOf, runApi, webhookSecret } from "../run-api.ts";

const USAGE = `Usage: runlet redeliver <run_id> [--app APP] [--webhook URL] [--webhook-secret S]
                        [--json]

Delivers an ended run's outcome to its webhook again (POST {api_url}/v4/{project}/{app}/runs/
{run_id}/deliveries), with the same retries as the first delivery. Follow its attempts with
\`runlet status <run_id>\`. --json prints the worker's answer (the run, its delivery under way).

  --app       the run's app (default: looked up in the runs index by the run id)
  --webhook   deliver to this URL instead of the run's own webhook

The delivery is signed with --webhook-secret, or RUNLET_WEBHOOK_SECRET when set (sent as
X-Webhook-Secret; the variable keeps it out of \`ps\`): the secret of the run call is not kept. Refused (409) while a delivery of the run is under way,
for a run that has not ended, and for a run that had no webhook.`;

export const redeliver: Command = {
  name: "redeliver",
  summary: "deliver a run's outcome to its webhook again",
  usage: USAGE,
  options: {
    app: { type: "string" },
    webhook: { type: "string" },
    "webhook-secret": { type: "string" },
  },
  async run({ values, positionals }) {
    const [runId, ...extra] = positionals;
    if (!runId || extra.length > 0) throw new CliError(`give one run id\n\n${USAGE}`);
    const config = await loadConfig();
    const app = typeof values.app === "string" ? values.app : await appOfRun(config, runId);
    const webhook = typeof values.webhook === "string" ? values.webhook : undefined;
    const secret = webhookSecret(values["webhook-secret"]);
    let view: RunView;
    try {
      view = await runApi(config).redeliver(app, runId, { webhook, secret });
    } catch (err) {
      throw cliErrorOf(err, "redeliver", config);
    }
    if (values.json) console.log(JSON.stringify(view));
    else
      console.log(
        `Delivering ${view.run_id} again${view.webhook ? ` to ${view.webhook.target}` : ""}: \`runlet status ${view.run_id}\` shows its attempts.`,
      );
    return 0;
  },
};
