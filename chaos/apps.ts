/** The apps the chaos scenarios deploy: a sleeper, a probe that tries to get out, a custom server. */
import { ESCAPE_PROBE_MAIN } from "../runtime-host/sandbox/escape-probe.ts";
import { sleeper } from "../test/apps.ts";

export const SLOW = sleeper([
  'name = "slow"',
  'runtime = "managed"',
  "response_grace_period = 600",
  "[scaling]",
  "max_replicas = 2",
]);

/** The app that tries to get out of its sandbox: `run({op, ...})` makes one attempt. */
export const PROBE = {
  "runlet.toml": 'name = "probe"\nruntime = "managed"\n',
  "main.mjs": ESCAPE_PROBE_MAIN,
};

/** A custom app: answers its PORT (its own namespace's loopback). */
export const WEB = {
  "runlet.toml": [
    'name = "web"',
    'runtime = "custom"',
    "[custom]",
    'entrypoint = ["node", "server.js"]',
    'healthcheck = "/"',
    "",
  ].join("\n"),
  "server.js": `require("node:http").createServer((req, res) => res.end("web " + process.env.PORT))
  .listen(Number(process.env.PORT), "127.0.0.1");`,
};
