// A synchronous caller that goes away before its answer: through the real host, the app hears
// of it (a custom app's request is closed, a function's ctx.signal aborts) and a custom app's
// replica slot is free again, instead of both staying taken until the app answers on its own.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HEADER } from "../../common/consts.ts";
import type { RunningHost } from "../server.ts";
import {
  configOf,
  eventually,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
} from "../test-support.ts";

/** Holds `/wait` unanswered and `/drip` mid-answer; `/count` says what it saw. */
const SERVER = `
const seen = { waiting: 0, dripping: 0, closed: 0 };
require("node:http").createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  if (req.url === "/count") return res.end(JSON.stringify(seen));
  res.on("close", () => { if (!res.writableFinished) seen.closed++; });
  if (req.url === "/wait") seen.waiting++;
  if (req.url === "/drip") {
    seen.dripping++;
    res.writeHead(200, { "content-type": "text/plain" });
    res.write("first\\n");
  }
}).listen(Number(process.env.PORT), "127.0.0.1");
`;

const FUNCTIONS = `
const seen = { started: 0, aborted: 0 };
export async function hold(input, ctx) {
  seen.started++;
  await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
  seen.aborted++;
  return "stopped";
}
export const count = () => seen;
`;

let home: string;
let host: RunningHost;

beforeEach(async () => {
  home = await newHome();
  host = await startTestHost(home, { limits: { startTimeoutMs: 5_000 } });
});

afterEach(async () => {
  await host.close();
  await removeHome(home);
});

const headers = { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: "run_gone" };
const active = async (app: string) =>
  (await hostClient(host.url).metrics())
    .filter((a) => a.app === app)
    .flatMap((a) => a.replicas)
    .reduce((n, r) => n + r.active, 0);

describe("a synchronous caller gone before its answer", () => {
  it("closes a custom app's request, waiting or streaming, and frees its slot", async () => {
    const config = configOf("web", {
      runtime: "custom",
      custom: { entrypoint: ["node", "server.js"], healthcheck: "/health" },
      scaling: { max_replicas: 1, replica_concurrency: 4 },
    });
    await hostClient(host.url).deploy("p", "web", 1, { "server.js": SERVER }, config);
    const send = (path: string, signal?: AbortSignal) =>
      fetch(`${host.url}/internal/http/p/web${path}`, { headers, signal });
    const count = async () => (await (await send("/count")).json()) as Record<string, number>;
    const slotsFree = () =>
      eventually(
        () => active("web"),
        (n) => n === 0,
      );

    const waiting = new AbortController();
    const held = send("/wait", waiting.signal).catch(() => undefined);
    await eventually(count, (seen) => seen.waiting === 1);
    waiting.abort();
    await held;
    await eventually(count, (seen) => seen.closed === 1);
    expect(await slotsFree()).toBe(0);

    const dripping = new AbortController();
    const res = await send("/drip", dripping.signal);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("first\n");
    dripping.abort();
    await eventually(count, (seen) => seen.closed === 2);
    expect(await slotsFree()).toBe(0);
  });

  it("aborts a function's ctx.signal", async () => {
    const client = hostClient(host.url);
    const config = configOf("fn", { scaling: { replica_concurrency: 4 } });
    await client.deploy("p", "fn", 1, { "main.mjs": FUNCTIONS }, config);
    const count = async () => (await client.invoke("p", "fn", "count")).body.result as Json;

    const caller = new AbortController();
    const held = fetch(`${host.url}/internal/invoke/p/fn/hold`, {
      method: "POST",
      headers,
      signal: caller.signal,
    }).catch(() => undefined);
    await eventually(count, (seen) => seen.started === 1);
    caller.abort();
    await held;
    expect(await eventually(count, (seen) => seen.aborted === 1)).toEqual({
      started: 1,
      aborted: 1,
    });
  });
});

type Json = Record<string, number>;
