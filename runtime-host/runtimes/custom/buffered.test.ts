// An async run's request to a custom app, through the real host: its answer read whole and
// reported to the callback — cut off when the app's process dies mid-answer.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HEADER } from "../../../common/consts.ts";
import type { HostRun } from "../../../common/protocol/host.ts";
import type { RunningHost } from "../../server.ts";
import {
  configOf,
  eventually,
  hostClient,
  newHome,
  type Received,
  removeHome,
  startReceiver,
  startTestHost,
  TOKEN,
} from "../../test-support.ts";

const SERVER = `
const http = require("node:http");
http.createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  if (req.url === "/crash") {
    res.writeHead(200, { "content-type": "text/plain" });
    res.write("partial");
    setTimeout(() => process.exit(1), 100);
    return;
  }
  res.end("fine");
}).listen(Number(process.env.PORT), "127.0.0.1");
`;

let home: string;
let host: RunningHost;
let receiver: Awaited<ReturnType<typeof startReceiver<HostRun>>>;
let received: Received<HostRun>[];

beforeEach(async () => {
  home = await newHome();
  host = await startTestHost(home);
  receiver = await startReceiver<HostRun>();
  received = receiver.received;
  const config = configOf("web", {
    runtime: "custom",
    custom: { entrypoint: ["node", "server.js"] },
    response_grace_period: 30,
  });
  const res = await hostClient(host.url).deploy("p", "web", 1, { "server.js": SERVER }, config);
  expect(res.status).toBe(200);
});

afterEach(async () => {
  await host.close();
  await receiver.close();
  await removeHome(home);
});

/** Submits an async run of `path` and resolves with its end, as the callback got it. */
async function runOf(path: string, runId: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${host.url}/internal/async-http/p/web${path}`, {
    method: "GET",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      [HEADER.runId]: runId,
      [HEADER.callbackUrl]: `${receiver.url}/runs/done`,
      ...headers,
    },
  });
  expect(res.status).toBe(202);
  const done = await eventually(
    async () => received.find((r) => r.body.runId === runId),
    (r) => r !== undefined,
    5_000,
  );
  return done?.body as HostRun;
}

describe("an async run's buffered answer", () => {
  it("fails at once, with the time it ran, when the app's process dies mid-answer", async () => {
    const started = Date.now();
    const run = await runOf("/crash", "run_cut");
    // Not after the 30 s response_grace_period: as soon as the connection broke.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(run).toMatchObject({ status: "failure", runTimeMs: expect.any(Number) });
    expect(run.error?.message).toMatch(/^the app's answer was cut off: /);
    expect(run.http).toBeUndefined();
    // The app serves again, from a new process.
    expect((await runOf("/", "run_after")).http?.body).toBe("fine");
  });
});
