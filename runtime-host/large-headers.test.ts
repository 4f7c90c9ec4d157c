/**
 * A custom app's caller may send headers up to what the edge takes (workerd: about 128 KiB for
 * the whole block). The runtime host's own parser stopped at Node's 16 KiB: such a call was
 * answered with the host's 431, without a run id and on no record, and an async one failed.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { HEADER } from "../common/consts.ts";
import { newId } from "../common/ids.ts";
import type { RunningHost } from "./server.ts";
import { configOf, hostClient, newHome, removeHome, startTestHost, TOKEN } from "./test-support.ts";

let home: string;
let host: RunningHost;

beforeAll(async () => {
  home = await newHome();
  host = await startTestHost(home, { limits: { spares: 0 } });
});

afterAll(async () => {
  await host.close();
  await removeHome(home);
});

it("hands a custom app a caller's header of 100 KiB, as the edge took it", async () => {
  // The app reads large headers itself; what it answers is its own business.
  const server = `require("node:http").createServer({ maxHeaderSize: 256 * 1024 }, (req, res) => {
  res.end(String((req.headers["x-note"] ?? "").length));
}).listen(Number(process.env.PORT), "127.0.0.1");`;
  const config = configOf("web", {
    runtime: "custom",
    custom: { entrypoint: ["node", "server.js"], healthcheck: "/" },
  });
  await hostClient(host.url).deploy("p", "web", 1, { "server.js": server }, config);
  const note = "n".repeat(100 * 1024);
  const res = await fetch(`${host.url}/internal/http/p/web/notes`, {
    headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: newId("run"), "x-note": note },
  });
  expect([res.status, await res.text()]).toEqual([200, String(note.length)]);
});
