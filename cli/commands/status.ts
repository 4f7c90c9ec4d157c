import { CliError, type Command } from "../command.ts";
import { type CliConfig, callProject, loadConfig, request } from "../config.ts";

/** The run's URL on the worker (`/v4/{project}/{app}/runs/{id}`): its app is in the runs index. */
async function runUrl(config: CliConfig, runId: string): Promise<string> {
  const { app } = await callProject<{ app: string }>(
    config,
    "GET",
    `/runs/${encodeURIComponent(runId)}`,
    `looking up ${runId}`,
  );
  return `${config.apiUrl}/v4/${config.projectId}/${encodeURIComponent(app)}/runs/${runId}`;
}

interface RunState {
  run_id: string;
  app: string;
  function: string;
  async: boolean;
  status: string;
  created_at: string;
  finished_at: string | null;
  run_time_ms: number | null;
  error?: { message: string };
  webhook?: {
    target: string;
    state: string;
    attempts: { attempt: number; at: string; status?: number; error?: string }[];
  };
  message?: string;
}

async function call(method: string, runId: string | undefined, extra: string[], usage: string) {
  if (!runId || extra.length > 0) throw new CliError(`give one run id\n\n${usage}`);
  const config = await loadConfig();
  const res = await request(
    await runUrl(config, runId),
    { method, headers: { authorization: `Bearer ${config.token}` } },
    method === "GET" ? "status" : "cancel",
  );
  const state = (await res.json().catch(() => ({}))) as RunState;
  if (!res.ok) throw new CliError(state.message ?? `the worker answered ${res.status}`);
  return state;
}

function print(state: RunState): void {
  const lines = [
    `${state.run_id}  ${state.app} ${state.function}  ${state.async ? "async" : "sync"}`,
    `status    ${state.status}${state.error ? `: ${state.error.message}` : ""}`,
    `created   ${state.created_at}`,
    `finished  ${state.finished_at ?? "-"}${state.run_time_ms === null ? "" : `  (${state.run_time_ms} ms)`}`,
  ];
  if (state.webhook) {
    lines.push(`webhook   ${state.webhook.state}  ${state.webhook.target}`);
    for (const a of state.webhook.attempts)
      lines.push(`  attempt ${a.attempt}  ${a.at}  ${a.status ?? a.error}`);
  }
  console.log(lines.join("\n"));
}

const STATUS_USAGE = `Usage: runlet status <run_id> [--json]

A run's state: queued, running, success, failure or cancelled, its times, its error, and
its webhook delivery attempts. --json prints the worker's answer.`;

export const status: Command = {
  name: "status",
  summary: "show a run's state and its webhook deliveries",
  usage: STATUS_USAGE,
  options: {},
  async run({ values, positionals }) {
    const [runId, ...extra] = positionals;
    const state = await call("GET", runId, extra, STATUS_USAGE);
    if (values.json) console.log(JSON.stringify(state));
    else print(state);
    return 0;
  },
};

const CANCEL_USAGE = `Usage: runlet cancel <run_id> [--json]

Cancels a queued or running async run: it ends cancelled (a queued one never starts, a
running one's ctx.signal aborts) and no webhook is delivered. A run that has ended cannot be
cancelled.`;

export const cancel: Command = {
  name: "cancel",
  summary: "cancel a queued or running async run",
  usage: CANCEL_USAGE,
  options: {},
  async run({ values, positionals }) {
    const [runId, ...extra] = positionals;
    const state = await call("DELETE", runId, extra, CANCEL_USAGE);
    if (values.json) console.log(JSON.stringify(state));
    else console.log(`Cancelled ${state.run_id}.`);
    return 0;
  },
};
