import { HEADER } from "../../common/consts.ts";
import { CliError, type Command } from "../command.ts";
import { loadConfig, request } from "../config.ts";

export const run: Command = {
  name: "run",
  summary: "call a function of a deployed app through the worker",
  usage: `Usage: runlet run <app> [function] [--data JSON] [--async] [--webhook URL] [--json]

Calls POST {api_url}/v4/{project}/{app}/{function} (function defaults to "run") with the
JSON body given by --data (default: {}). Prints the function's result; --json prints the whole
response ({run_id, result, run_time_ms}).

  --async     run in the background: prints the run id at once (follow it with
              \`runlet status <run_id>\`, stop it with \`runlet cancel <run_id>\`)
  --webhook   also POST the response to this URL once the function has answered; signed
              when RUNLET_WEBHOOK_SECRET is set (sent as X-Webhook-Secret)`,
  options: {
    data: { type: "string", short: "d" },
    async: { type: "boolean" },
    webhook: { type: "string" },
  },
  async run({ values, positionals }) {
    const [app, fn = "run"] = positionals;
    if (!app) throw new CliError(`missing <app>\n\n${run.usage}`);
    const data = typeof values.data === "string" ? values.data : "{}";
    try {
      JSON.parse(data);
    } catch {
      throw new CliError(`--data is not valid JSON: ${data}`);
    }
    const config = await loadConfig();
    const query = new URLSearchParams();
    if (values.async) query.set("async", "true");
    if (typeof values.webhook === "string") query.set("webhookEndpoint", values.webhook);
    const headers: Record<string, string> = {
      authorization: `Bearer ${config.token}`,
      "content-type": "application/json",
    };
    const secret = process.env.RUNLET_WEBHOOK_SECRET;
    if (secret && typeof values.webhook === "string") headers[HEADER.webhookSecret] = secret;
    const res = await request(
      `${config.apiUrl}/v4/${config.projectId}/${encodeURIComponent(app)}/${encodeURIComponent(fn)}${query.size ? `?${query}` : ""}`,
      { method: "POST", headers, body: data },
      "run",
    );
    const text = await res.text();
    let body: {
      result?: unknown;
      message?: string;
      error?: { message?: string };
      run_id?: string;
    } = {};
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: printed as is below
    }
    const runId = res.headers.get(HEADER.requestId) ?? body.run_id;
    if (values.json) {
      console.log(text);
    } else if (res.status === 202 && runId) {
      console.log(runId);
      console.error(`running in the background: runlet status ${runId}`);
      return 0;
    } else if (res.ok) {
      console.log(JSON.stringify(body.result, null, 2));
    } else {
      console.error(
        `run failed (${res.status}): ${body.error?.message ?? body.message ?? text.slice(0, 200)}`,
      );
    }
    if (!values.json && runId) console.error(`run id: ${runId}`);
    return res.ok ? 0 : 1;
  },
};
