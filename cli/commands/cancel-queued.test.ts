// `runlet cancel --app NAME --queued` against a real Node control plane (no Worker: nothing is
// cancelled here): an app that is not deployed is an error naming it, not "Cancelled 0"; and,
// against a fake run API (the race it guards against cannot be timed in a real one), a run that
// started since the list was read is left to run, and a cancel that fails part way says how far
// it got. test/queue.test.ts runs it against a whole stack.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { type FirstUser, runlet, withFirstUser } from "./test-support.ts";

let first: FirstUser;

beforeAll(async () => {
  first = await withFirstUser("cancel-queued", "first");
});

afterAll(() => first?.stop());

it("refuses an app that is not deployed (a mistyped name), rather than cancel nothing and exit 0", async () => {
  const done = await runlet(["cancel", "--app", "helo", "--queued"], first.env);
  expect(done.stdout).toBe("");
  expect(done.code).toBe(1);
  expect(done.stderr).toContain("app 'helo' is not deployed");
});

it("leaves alone a run that started after the list was read: its cancel says onlyIfQueued", async () => {
  // The index listed four runs as queued; two have started since. A plain DELETE cancels them.
  const ids = ["run_q1", "run_s1", "run_q2", "run_s2"];
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const url = req.url ?? "";
    const reply = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (url === "/v2/projects/prj_1/apps/burst") return reply(200, { name: "burst" });
    if (url.startsWith("/v2/projects/prj_1/runs?"))
      return reply(200, { runs: ids.map((id) => ({ id, async: true })) });
    requests.push(`${req.method} ${url}`);
    const { pathname, searchParams } = new URL(url, "http://x");
    const id = pathname.split("/").at(-1) as string;
    if (id.startsWith("run_s") && searchParams.get("onlyIfQueued") === "true")
      return reply(409, { message: `run '${id}' has started (running)` });
    return reply(200, { run_id: id, app: "burst", status: "cancelled" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
    const done = await runlet(["cancel", "--app", "burst", "--queued", "--json"], env);
    expect(done.code, done.stderr).toBe(0);
    const result = JSON.parse(done.stdout);
    expect([...result.cancelled].sort()).toEqual(["run_q1", "run_q2"]);
    expect([...result.skipped].sort()).toEqual(["run_s1", "run_s2"]);
    // One request per run, each a cancel only if still queued.
    expect(requests.sort()).toEqual(
      ids.sort().map((id) => `DELETE /v4/prj_1/burst/runs/${id}?onlyIfQueued=true`),
    );
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

it("says how far it got when a cancel fails part way, rather than only the error", async () => {
  // Ten runs queued; the run API answers the fourth cancel 503: the work stops there.
  const ids = Array.from({ length: 10 }, (_, i) => `run_${String(i).padStart(2, "0")}`);
  let deletes = 0;
  let cancelled = 0;
  const server = createServer((req, res) => {
    const url = req.url ?? "";
    const reply = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (url === "/v2/projects/prj_1/apps/burst") return reply(200, { name: "burst" });
    if (url.startsWith("/v2/projects/prj_1/runs?"))
      return reply(200, { runs: ids.map((id) => ({ id, async: true })) });
    const id = url.split("/").at(-1) as string;
    if (req.method === "GET") return reply(200, { run_id: id, app: "burst", status: "queued" });
    if (++deletes === 4) return reply(503, { message: "the run store is not answering" });
    cancelled++;
    return reply(200, { run_id: id, app: "burst", status: "cancelled" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
    const done = await runlet(["cancel", "--app", "burst", "--queued"], env);
    expect(done.code).toBe(1);
    expect(done.stderr).toContain("the run store is not answering");
    expect(done.stderr).toContain(
      `stopped after cancelling ${cancelled} of the 10 queued runs (0 had started or ended): run it again to cancel the rest`,
    );
    expect(cancelled).toBeLessThan(10);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
