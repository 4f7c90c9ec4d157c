// The CLI's management calls answered by another server than the control plane: the run API
// (RUNLET_BASE_URL and RUNLET_API_URL swapped), or a web server that answers 200 without JSON.
// `runlet apps` said "listing apps failed (404): no route for GET /v2/projects/…" of the first,
// and ended in a TypeError and its stack for the second.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it, vi } from "vitest";
import { main } from "./main.ts";

/** Answers as the Worker answers a path it has no route for, or as a plain web server. */
let server: Server;
let origin: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    const [, kind] = (req.url ?? "").split("/");
    if (kind === "worker")
      return res
        .writeHead(404, { "content-type": "application/json" })
        .end(
          JSON.stringify({ message: `no route for ${req.method} ${req.url}`, code: "not_found" }),
        );
    if (kind === "control-plane")
      return res
        .writeHead(404, {
          "content-type": "application/json",
          "x-request-id": "req_01m8cw5v4g64a9c9brt5eearq4",
        })
        .end(JSON.stringify({ message: "app 'x' is not deployed", code: "not_found" }));
    res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

let out: ReturnType<typeof vi.spyOn>;
let err: ReturnType<typeof vi.spyOn>;
beforeEach(() => {
  out = vi.spyOn(console, "log").mockImplementation(() => {});
  err = vi.spyOn(console, "error").mockImplementation(() => {});
  vi.stubEnv("RUNLET_API_URL", origin);
  vi.stubEnv("RUNLET_PROJECT", "prj_1");
  vi.stubEnv("RUNLET_TOKEN", "t");
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

const printed = (spy: ReturnType<typeof vi.spyOn>) => spy.mock.calls.map((c) => String(c[0]));
const FIX =
  "Set RUNLET_BASE_URL to the control plane's address, the management API's (runlet start prints it on its \"control plane\" line)";

it("says that RUNLET_BASE_URL is the run API's address, not the control plane's", async () => {
  vi.stubEnv("RUNLET_BASE_URL", `${origin}/worker`);
  expect(await main(["apps"])).toBe(1);
  expect(printed(err)).toEqual([
    `runlet apps: ${origin} (RUNLET_BASE_URL) is Runlet's run API (the Worker, RUNLET_API_URL's), not its control plane: it answered 404 {"message":"no route for GET /worker/v2/projects/prj_1/apps","code":"not_found"}. ${FIX}`,
  ]);
  // --json: the reason alone, with the status it came with.
  out.mockClear();
  expect(await main(["apps", "show", "x", "--json"])).toBe(1);
  expect(JSON.parse(printed(out)[0] as string)).toMatchObject({
    message: expect.stringContaining("is Runlet's run API (the Worker"),
    status: 404,
  });
});

it("says that an address answering 200 without JSON is not the control plane, without a stack", async () => {
  vi.stubEnv("RUNLET_BASE_URL", `${origin}/web`);
  expect(await main(["apps"])).toBe(1);
  expect(printed(err)).toEqual([
    `runlet apps: ${origin} (RUNLET_BASE_URL) is not Runlet's control plane (its answer is not JSON): it answered 200 ok. ${FIX}`,
  ]);
  expect(printed(out)).toEqual([]);
});

it("passes the control plane's own 404 on as before", async () => {
  vi.stubEnv("RUNLET_BASE_URL", `${origin}/control-plane`);
  expect(await main(["apps", "show", "x"])).toBe(1);
  expect(printed(err)).toEqual([
    "runlet apps: reading the app failed (404): app 'x' is not deployed",
  ]);
});
