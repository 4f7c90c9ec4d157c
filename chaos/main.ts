/**
 * `npm run chaos`: starts a real stack (`runlet start` on a fresh RUNLET_HOME and free loopback
 * ports), deploys three apps, runs every scenario against it in turn, and prints a table:
 * scenario, expected, observed. Exits 1 if any scenario failed. A few minutes; not in npm test.
 */
import { parseArgs } from "node:util";
import { client } from "../test/apps.ts";
import { newHome, removeHome, startRunlet } from "../test/harness.ts";
import { startReceiver } from "../test/receiver.ts";
import { PROBE, SLOW, WEB } from "./apps.ts";
import { SCENARIOS } from "./scenarios.ts";

const USAGE = `Usage: npm run chaos [-- --json] [-- --only <text>]

Starts Runlet for real on a temporary home and free loopback ports, deploys a sleeper, a probe
and a custom app, then kills, stops and abuses the stack one scenario at a time: SIGKILL of
each component and of runlet start, SIGTERM of the runtime host mid-call, oversized bodies,
apps trying to leave their sandbox, and a second host on a slow link that is cut. Prints scenario | expected | observed | ok.
--json   the table as JSON on stdout (progress stays on stderr)
--only   run only the scenarios whose name contains <text>`;

interface Row {
  scenario: string;
  expected: string;
  observed: string;
  ok: boolean | "skipped";
}

const { values } = parseArgs({
  options: {
    json: { type: "boolean" },
    only: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

const progress = (line: string) => process.stderr.write(`chaos: ${line}\n`);
const rows: Row[] = [];
const home = await newHome();
const receiver = await startReceiver();
progress(`starting a stack on ${home}…`);
let stack = await startRunlet(home);
try {
  for (const files of [SLOW, PROBE, WEB]) await client(stack).deploy(files);
  for (const scenario of SCENARIOS) {
    if (values.only && !scenario.name.includes(values.only)) continue;
    const skipped = scenario.skip?.();
    if (skipped) {
      rows.push({
        scenario: scenario.name,
        expected: scenario.expected,
        observed: skipped,
        ok: "skipped",
      });
      continue;
    }
    progress(`${scenario.name}…`);
    const started = Date.now();
    const outcome = await scenario.run(stack, receiver).catch((err: Error) => ({
      observed: `error: ${err.message.split("\n")[0]}`,
      ok: false,
    }));
    rows.push({ scenario: scenario.name, expected: scenario.expected, ...outcome });
    progress(
      `${outcome.ok ? "ok" : "FAILED"} in ${((Date.now() - started) / 1000).toFixed(1)} s: ${outcome.observed}`,
    );
    // A scenario that ended the stack (runlet start killed) leaves it stopped: start it again.
    if (stack.process.exitCode !== null || stack.process.signalCode !== null) {
      stack = await startRunlet(home, stack.ports);
    }
  }
} finally {
  await stack.stop();
  await receiver.close();
  await removeHome(home);
}

if (values.json) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  const cell = (text: string) => text.replaceAll("|", "\\|");
  console.log("| scenario | expected | observed | ok |\n|---|---|---|---|");
  for (const row of rows) {
    const ok = row.ok === "skipped" ? "skipped" : row.ok ? "yes" : "NO";
    console.log(
      `| ${cell(row.scenario)} | ${cell(row.expected)} | ${cell(row.observed)} | ${ok} |`,
    );
  }
}
process.exit(rows.some((row) => row.ok === false) ? 1 : 0);
