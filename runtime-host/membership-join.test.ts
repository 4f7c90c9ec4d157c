// A host that starts before its control plane (as under `runlet start`) registers once it is up
// without an error line; one that cannot register for 3 s says so once, naming the address and
// why (every start's runtime-host.log began "cannot register yet (… ECONNREFUSED …); retrying").
import { createServer, type Server } from "node:http";
import { afterEach, expect, it, vi } from "vitest";
import { freePort } from "../cli/processes.ts";
import { Membership, registerPause } from "./membership.ts";

let server: Server | undefined;
let membership: Membership | undefined;

afterEach(async () => {
  membership?.stop();
  vi.restoreAllMocks();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A control plane on `port` from `afterMs` on, answering the registration only. */
function controlPlaneLater(port: number, afterMs: number): void {
  setTimeout(() => {
    server = createServer((req, res) => {
      req.resume();
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({ hostId: "hst_1", internalToken: "t".repeat(32), heartbeatMs: 60_000 }),
      );
    }).listen(port, "127.0.0.1");
  }, afterMs);
}

/** Joins the control plane on `port` with the token `hostToken` reads at each request. */
function joining(port: number, hostToken: () => string = () => "rlh_test") {
  membership = new Membership({
    controlPlaneUrl: `http://127.0.0.1:${port}`,
    hostToken,
    heartbeat: () => ({ state: "up", busy: 0, queued: 0, apps: [] }),
    answered: () => {},
  });
  return membership.join({ name: "h1", address: "http://127.0.0.1:1", slots: 4, memoryMb: 1024 });
}

async function join(port: number): Promise<string[]> {
  const logged: string[] = [];
  vi.spyOn(console, "error").mockImplementation((line: string) => {
    logged.push(line);
  });
  expect((await joining(port)).hostId).toBe("hst_1");
  return logged;
}

it("says nothing of a control plane that comes up a moment after the host", async () => {
  const port = await freePort();
  controlPlaneLater(port, 1_000);
  expect(await join(port)).toEqual([]);
});

it("says once, after 3 s, where it cannot register and why", async () => {
  const port = await freePort();
  controlPlaneLater(port, 6_000);
  expect(await join(port)).toEqual([
    expect.stringMatching(
      new RegExp(
        `^runtime host: cannot register with http://127\\.0\\.0\\.1:${port} for [34] s \\(fetch failed: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\); still trying$`,
      ),
    ),
  ]);
}, 20_000);

it("tries a control plane that refuses connections every 250 ms while it starts, then less often", async () => {
  const port = await freePort();
  const refused = await fetch(`http://127.0.0.1:${port}/`).catch((err: unknown) => err);
  const timedOut = new DOMException("The operation was aborted due to timeout", "TimeoutError");
  // Nothing listening yet (the control plane starting beside the host): no growing pause.
  expect([0, 1, 4, 20].map((attempt) => registerPause(attempt, refused, 5_000))).toEqual([
    250, 250, 250, 250,
  ]);
  // Still refused after 30 s, or any other failure: the pauses grow as before.
  expect([0, 1, 4, 20].map((attempt) => registerPause(attempt, refused, 31_000))).toEqual([
    250, 500, 5_000, 5_000,
  ]);
  expect([0, 1, 4].map((attempt) => registerPause(attempt, timedOut, 1_000))).toEqual([
    250, 500, 5_000,
  ]);
});

it("registers with its token file's new token when the old one, read just before, was refused as revoked", async () => {
  // `runlet start`'s control plane replaces a revoked `local` token in the file before it listens;
  // a host on a busy machine read the file, then connected once the control plane listened, and
  // exited "refused: … was revoked" (a supervisor test, once in a CI run).
  let file = "rlh_old";
  server = createServer((req, res) => {
    req.resume();
    res.setHeader("content-type", "application/json");
    if (req.headers.authorization !== "Bearer rlh_new") {
      file = "rlh_new"; // replaced while this request was on its way
      res.statusCode = 401;
      return res.end(JSON.stringify({ message: "this one, 'local', was revoked" }));
    }
    res.end(
      JSON.stringify({ hostId: "hst_1", internalToken: "t".repeat(32), heartbeatMs: 60_000 }),
    );
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server?.listen(port, "127.0.0.1", resolve));
  expect((await joining(port, () => file)).hostId).toBe("hst_1");
});

it("stops at a revoked token the file still holds", async () => {
  server = createServer((req, res) => {
    req.resume();
    res.statusCode = 401;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ message: "this one, 'local', was revoked" }));
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server?.listen(port, "127.0.0.1", resolve));
  await expect(joining(port, () => "rlh_old")).rejects.toThrow(/was revoked/);
});
