import { HEADER } from "../../../common/consts.ts";
import { CliError, type Command } from "../command.ts";
import { loadConfig, request } from "../config.ts";

export const run: Command = {
  name: "run",
  summary: "call a function of a deployed app through the worker",
  usage: `Usage: runlet run <app> [function] [--data JSON] [--json]

Calls POST {api_url}/v4/{project}/{app}/{function} (function defaults to "run") with the
JSON body given by --data (default: {}). Prints the function's result; --json prints the whole
response ({run_id, result, run_time_ms}).`,
  options: { data: { type: "string", short: "d" } },
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
    const res = await request(
      `${config.apiUrl}/v4/${config.projectId}/${encodeURIComponent(app)}/${encodeURIComponent(fn)}`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${config.token}`, "content-type": "application/json" },
        body: data,
      },
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
