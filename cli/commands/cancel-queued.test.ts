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

/**
 * A fake control plane and run API on loopback (the race cannot be timed in a real one): the
 * app `burst` with `ids` queued in the runs index, each DELETE answered by `cancel`. Runs
 * `runlet cancel --app burst --queued` (with `args`) against it.
 */
async function cancelAgainst(
  ids: string[],
  cancel: (id: string, url: URL) => [number, unknown],
  args: string[] = [],
) {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "", "http://x");
    const reply = (status: number, body: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    if (url.pathname === "/v2/projects/prj_1/apps/burst") return reply(200, { name: "burst" });
    if (url.pathname === "/v2/projects/prj_1/runs")
      return reply(200, { runs: ids.map((id) => ({ id, async: true })) });
    if (req.method !== "DELETE") return reply(405, { message: `${req.method} was not expected` });
    return reply(...cancel(url.pathname.split("/").at(-1) as string, url));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const env = {
      [ENV.baseUrl]: base,
      [ENV.apiUrl]: base,
      [ENV.project]: "prj_1",
      [ENV.token]: "t",
    };
    return await runlet(["cancel", "--app", "burst", "--queued", ...args], env);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

const cancelled = (id: string, startedAt: string | null = null): [number, unknown] => [
  200,
  { run_id: id, app: "burst", status: "cancelled", started_at: startedAt },
];

it("leaves alone a run that started after the list was read: its cancel says onlyIfQueued", async () => {
  // The index listed four runs as queued; two have started since. A plain DELETE cancels them.
  const ids = ["run_q1", "run_s1", "run_q2", "run_s2"];
  const requests: string[] = [];
  const done = await cancelAgainst(
    ids,
    (id, url) => {
      requests.push(`DELETE ${url.pathname}${url.search}`);
      return id.startsWith("run_s") && url.searchParams.get("onlyIfQueued") === "true"
        ? [409, { message: `run '${id}' has started (running)` }]
        : cancelled(id);
    },
    ["--json"],
  );
  expect(done.code, done.stderr).toBe(0);
  const result = JSON.parse(done.stdout);
  expect([...result.cancelled].sort()).toEqual(["run_q1", "run_q2"]);
  expect([...result.skipped].sort()).toEqual(["run_s1", "run_s2"]);
  // One request per run, each a cancel only if still queued.
  expect(requests.sort()).toEqual(
    ids.sort().map((id) => `DELETE /v4/prj_1/burst/runs/${id}?onlyIfQueued=true`),
  );
});

it("says how far it got when a cancel fails part way, rather than only the error", async () => {
  // Ten runs queued; the run API answers the fourth cancel 503: the work stops there.
  const ids = Array.from({ length: 10 }, (_, i) => `run_${String(i).padStart(2, "0")}`);
  let deletes = 0;
  let done = 0;
  const run = await cancelAgainst(ids, (id) => {
    if (++deletes === 4) return [503, { message: "the run store is not answering" }];
    done++;
    return cancelled(id);
  });
  expect(run.code).toBe(1);
  expect(run.stderr).toContain("the run store is not answering");
  expect(run.stderr).toContain(
    `stopped after cancelling ${done} of the 10 queued runs (0 had started or ended): run it again to cancel the rest`,
  );
  expect(done).toBeLessThan(10);
});

it("says which runs had begun as they were cancelled, rather than count them as queued ones", async () => {
  // run_b's host started it the instant of its cancel (or a run API older than the CLI
  // ignored onlyIfQueued): it was cancelled running, which the user meant to avoid.
  const run = await cancelAgainst(["run_a", "run_b"], (id) =>
    cancelled(id, id === "run_b" ? "2026-11-27T04:00:00.000Z" : null),
  );
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain("Cancelled 2 queued runs of burst.");
  expect(run.stderr).toContain("1 of them had started as they were cancelled (run_b)");
  const json = await cancelAgainst(
    ["run_a", "run_b"],
    (id) => cancelled(id, id === "run_b" ? "2026-11-27T04:00:00.000Z" : null),
    ["--json"],
  );
  expect(JSON.parse(json.stdout)).toMatchObject({ started: ["run_b"] });
});
