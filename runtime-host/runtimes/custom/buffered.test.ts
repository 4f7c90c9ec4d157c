// An async run's request to a custom app, through the real host: its answer read whole and
// reported to the callback — cut off when the app's process dies mid-answer, decoded by its
// content-encoding, base64 when it is not text.

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
const zlib = require("node:zlib");
const JSON_BODY = JSON.stringify({ items: Array.from({ length: 200 }, (_, i) => i), word: "héllo" });
const ENCODE = { gzip: zlib.gzipSync, deflate: zlib.deflateSync, br: zlib.brotliCompressSync };
const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
http.createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  if (req.url === "/accept") return res.end(req.headers["accept-encoding"] ?? "none");
  const encoding = req.url.match(/^\\/encoded\\/(\\w+)$/)?.[1];
  if (encoding) {
    // Encoded whatever the request asked, as a server that always compresses does.
    res.writeHead(200, { "content-type": "application/json", "content-encoding": encoding });
    return res.end(ENCODE[encoding] ? ENCODE[encoding](JSON_BODY) : JSON_BODY);
  }
  if (req.url === "/png") {
    res.writeHead(200, { "content-type": "image/png" });
    return res.end(PNG);
  }
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

  it("asks the app for no encoding, whatever the request said (workerd adds br, gzip)", async () => {
    const run = await runOf("/accept", "run_accept", { "accept-encoding": "br, gzip" });
    expect(run.http?.body).toBe("identity");
  });

  it("decodes an answer the app compressed anyway: gzip, deflate, br", async () => {
    const expected = JSON.stringify({
      items: Array.from({ length: 200 }, (_, i) => i),
      word: "héllo",
    });
    for (const encoding of ["gzip", "deflate", "br"]) {
      const run = await runOf(`/encoded/${encoding}`, `run_${encoding}`);
      expect(run).toMatchObject({ status: "success", http: { status_code: 200 } });
      expect(run.http?.body).toBe(expected);
      expect(run.http?.body_encoding).toBeUndefined();
    }
  });

  it("fails a run whose answer has an encoding it cannot decode, naming it", async () => {
    const run = await runOf("/encoded/zstd", "run_zstd");
    expect(run).toMatchObject({
      status: "failure",
      error: {
        message:
          "the app's answer has content-encoding 'zstd', which Runlet cannot decode (it asks for identity and decodes gzip, deflate and br)",
      },
    });
  });

  it("passes a body that is not UTF-8 text (an image) as base64, saying so", async () => {
    const run = await runOf("/png", "run_png");
    expect(run).toMatchObject({
      status: "success",
      http: { status_code: 200, content_type: "image/png", body_encoding: "base64" },
    });
    expect(Buffer.from(run.http?.body ?? "", "base64").toString("hex")).toBe(
      "89504e470d0a1a0a0000000d49484452",
    );
  });
});
