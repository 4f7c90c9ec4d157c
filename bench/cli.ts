/**
 * `npm run bench:cli`: how long a `runlet` command takes from its start to its exit, compiled
 * (bin/compiled.mjs, the default) and from its sources through tsx (`RUNLET_FROM_SOURCE=1`),
 * against the floor of starting Node at all (`node -e 0`), measured alternately in one run. A
 * command that calls the API (`runlet apps --json`) runs against a local Runlet it starts. Also
 * times a build of the compiled CLI into a cache of its own (what the first command after a
 * change pays).
 */
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compiled } from "../bin/compiled.mjs";
import { BIN, newHome, ROOT, removeHome, startRunlet } from "../test/harness.ts";
import { countOptions, describeMachine, machineInfo, ms, summarize, table } from "./stats.ts";

const HELP = `Usage: npm run bench:cli -- [options]

Times runlet commands from start to exit, compiled and through tsx, against \`node -e 0\`.

Options:
  --samples N   runs of each command each way (default 20)
  --builds N    builds of the compiled CLI into an empty cache (default 3)
  --json        print the results as JSON instead of a table
  --help        show this help
`;

const args = countOptions("bench:cli", HELP, { samples: 20, builds: 3 });
const progress = (line: string) => process.stderr.write(`${line}\n`);

/** Milliseconds from spawning `argv` to its exit; throws if it failed. */
function timed(argv: string[], env: NodeJS.ProcessEnv): number {
  const began = performance.now();
  const done = spawnSync(process.execPath, argv, { cwd: ROOT, env, stdio: "ignore" });
  const took = performance.now() - began;
  if (done.status !== 0) throw new Error(`node ${argv.join(" ")} exited ${done.status}`);
  return took;
}

progress("starting a local Runlet…");
const home = await newHome();
const runlet = await startRunlet(home);
const samples: Record<string, number[]> = {};
const add = (key: string, value: number) => {
  samples[key] ??= [];
  samples[key].push(value);
};
try {
  const ways = {
    compiled: { ...runlet.env, RUNLET_FROM_SOURCE: "0" },
    tsx: { ...runlet.env, RUNLET_FROM_SOURCE: "1" },
  };
  const commands = { "runlet --help": ["--help"], "runlet apps --json": ["apps", "--json"] };
  // Once each, unmeasured: the compiled module is built, tsx's cache is warm.
  for (const env of Object.values(ways))
    for (const argv of Object.values(commands)) timed([BIN, ...argv], env);
  progress(`timing ${args.samples} of each command each way, alternately…`);
  for (let i = 0; i < args.samples; i++) {
    add("node -e 0", timed(["-e", "0"], process.env));
    for (const [way, env] of Object.entries(ways))
      for (const [command, argv] of Object.entries(commands))
        add(`${command} (${way})`, timed([BIN, ...argv], env));
  }
} finally {
  await runlet.stop();
  await removeHome(home);
}

progress(`building the compiled CLI ${args.builds} times into an empty cache…`);
for (let i = 0; i < args.builds; i++) {
  const cache = await mkdtemp(join(tmpdir(), "runlet-bench-cli-"));
  const began = performance.now();
  const url = await compiled(join(ROOT, "cli", "main.ts"), cache);
  add("a build of the compiled CLI", performance.now() - began);
  await rm(cache, { recursive: true, force: true });
  if (!url) throw new Error("the CLI did not build");
}

const floor = summarize(samples["node -e 0"] ?? []).p50;
const summaries = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
const machine = machineInfo();
if (args.json) {
  console.log(JSON.stringify({ machine, ...summaries }));
} else {
  console.log(`\n${describeMachine(machine)}\n`);
  console.log(
    table(
      ["what", "n", "p50 ms", "p99 ms", "p50 vs node -e 0"],
      Object.entries(summaries).map(([what, s]) => [
        what,
        s.n,
        ms(s.p50),
        ms(s.p99),
        (s.p50 / floor).toFixed(1),
      ]),
    ),
  );
}
