// runlet start on a machine without internet access: the Worker's runtime fetched a Request.cf
// sample from workers.cloudflare.com at each start (the Worker reads no request.cf), and offline
// worker.log began with a warning and a stack trace (getaddrinfo ENOTFOUND) at every start of
// the Worker (round 13, reading the logs as an operator). Under vitest (NODE_ENV=test) miniflare
// skips that fetch, so this stack runs as `npm start` does, with another NODE_ENV.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { newHome, type Runlet, removeHome, startRunlet } from "./harness.ts";

let runlet: Runlet | undefined;
let home: string;

afterAll(async () => {
  await runlet?.stop();
  if (home) await removeHome(home);
});

it("starts the Worker without reaching out to Cloudflare, so its log holds no such warning", async () => {
  home = await newHome();
  runlet = await startRunlet(home, undefined, { NODE_ENV: "development" });
  // The warning came a second or so after the ready line: looked for for 5 s.
  let log = "";
  for (let i = 0; i < 25 && !log.includes("Request.cf"); i++) {
    await new Promise((r) => setTimeout(r, 200));
    log = await readFile(join(home, "logs", "worker.log"), "utf8");
  }
  expect(log).toContain("worker listening on");
  expect(log).not.toContain("Request.cf");
  expect(log).not.toContain("ENOTFOUND");
});
