import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { newId } from "../../common/ids.ts";
import { runlet } from "./test-support.ts";

const runId = newId("run");
/** A run whose redelivery the run API refuses (409). */
const refusedId = newId("run");
/** The X-Webhook-Secret of each delivery asked for ("" for none). */
const secrets: string[] = [];
let server: ReturnType<typeof createServer>;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  // The run API's answer to a redelivery: the run, its new delivery pending.
  server = createServer((req, res) => {
    if (req.url?.includes(refusedId)) {
      res.writeHead(409, { "content-type": "application/json", "x-request-id": refusedId });
      res.end(JSON.stringify({ message: `run '${refusedId}' had no webhook`, code: "conflict" }));
      return;
    }
    secrets.push(String(req.headers["x-webhook-secret"] ?? ""));
    const view = {
      run_id: runId,
      project: "prj_1",
      app: "hello",
      function: "run",
      async: true,
      status: "success",
      created_at: "2026-11-26T00:00:00.000Z",
      started_at: "2026-11-26T00:00:01.000Z",
      finished_at: "2026-11-26T00:00:02.000Z",
      run_time_ms: 1000,
      host: null,
      webhook: { target: "https://example.com/hook", state: "pending", attempts: [] },
    };
    res.writeHead(202, { "content-type": "application/json", "x-request-id": runId });
    res.end(JSON.stringify(view));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  env = {
    [ENV.baseUrl]: url,
    [ENV.apiUrl]: url,
    [ENV.project]: "prj_1",
    [ENV.token]: "t",
    RUNLET_WEBHOOK_SECRET: undefined,
  };
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

it("says on stderr that a redelivery without a secret is unsigned, as run --webhook does", async () => {
  // It went out unsigned without a word.
  const unsigned = await runlet(["redeliver", runId, "--app", "hello"], env);
  expect(unsigned.code, unsigned.stderr).toBe(0);
  expect(unsigned.stdout).toBe(`Delivering ${runId} again to https://example.com/hook.`);
  expect(unsigned.stderr.split("\n")[0]).toBe(
    "Note: the redelivery is unsigned (no --webhook-secret, no RUNLET_WEBHOOK_SECRET): its receiver cannot verify that it comes from Runlet (docs/webhooks.md).",
  );
  // With --json, standard output holds the answer alone; the note stays on stderr.
  const json = await runlet(["redeliver", runId, "--app", "hello", "--json"], env);
  expect(JSON.parse(json.stdout)).toMatchObject({ run_id: runId });
  expect(json.stderr).toMatch(/^Note: the redelivery is unsigned/);
  // Signed, by the flag or the variable: no note.
  const flag = await runlet(["redeliver", runId, "--app", "hello", "--webhook-secret", "s1"], env);
  const variable = await runlet(["redeliver", runId, "--app", "hello"], {
    ...env,
    RUNLET_WEBHOOK_SECRET: "s2",
  });
  for (const signed of [flag, variable]) {
    expect(signed.code, signed.stderr).toBe(0);
    expect(signed.stderr).not.toMatch(/unsigned/);
  }
  expect(secrets).toEqual(["", "", "s1", "s2"]);
});

it("says nothing of signing when the redelivery is refused: only the refusal", async () => {
  // The note that it went unsigned came first, though nothing went.
  const refused = await runlet(["redeliver", refusedId, "--app", "hello"], env);
  expect(refused.code).toBe(1);
  expect(refused.stderr).not.toMatch(/unsigned/);
  expect(refused.stderr).toMatch(/had no webhook/);
});

it("refuses a --webhook that is no http(s) URL before it sends anything, --failed too", async () => {
  const before = secrets.length;
  for (const args of [[runId, "--app", "hello"], ["--failed"]]) {
    const refused = await runlet(["redeliver", ...args, "--webhook", "hooks.example.com/x"], env);
    expect([refused.code, refused.stdout, refused.stderr.trim()]).toEqual([
      1,
      "",
      "runlet redeliver: --webhook must be an absolute http(s) URL, such as https://example.com/hook (got 'hooks.example.com/x')",
    ]);
  }
  expect(secrets.length).toBe(before);
});

it("says --failed --app of a name that is no app and has no kept run is not found, as runs --app does", async () => {
  // The control plane: no failed delivery anywhere, and only the app 'quiet'.
  const asked: string[] = [];
  const plane = createServer((req, res) => {
    const path = new URL(req.url ?? "", "http://x").pathname;
    asked.push(path);
    const known = path === "/v2/projects/prj_1/apps/quiet" || path.endsWith("/runs");
    res.writeHead(known ? 200 : 404, { "content-type": "application/json" });
    res.end(
      JSON.stringify(
        known
          ? { runs: [], hasMore: false, name: "quiet" }
          : { message: "app 'quite' is not deployed in project 'prj_1'", code: "not_found" },
      ),
    );
  });
  await new Promise<void>((resolve) => plane.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(plane.address() as AddressInfo).port}`;
  const planeEnv = { ...env, [ENV.baseUrl]: url };
  try {
    // A mistyped name said "No run of 'quite' has a failed delivery." and exited 0.
    const typo = await runlet(["redeliver", "--failed", "--app", "quite"], planeEnv);
    expect([typo.code, typo.stdout]).toEqual([1, ""]);
    expect(typo.stderr).toBe(
      "runlet redeliver: app 'quite' is not deployed in project 'prj_1', and no run of it is kept (runlet apps lists the project's apps)",
    );
    const json = await runlet(["redeliver", "--failed", "--app", "quite", "--json"], planeEnv);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 404, code: "not_found" });
    // An app of the project with nothing to send again is a note, exit 0.
    const quiet = await runlet(["redeliver", "--failed", "--app", "quiet"], planeEnv);
    expect([quiet.code, quiet.stdout, quiet.stderr]).toEqual([
      0,
      "",
      "No run of 'quiet' has a failed delivery.",
    ]);
  } finally {
    await new Promise((resolve) => plane.close(resolve));
  }
});

it("says a refused listing of --failed in words that read once", async () => {
  // It read "listing runs whose delivery failed failed (403): …".
  const plane = createServer((_req, res) => {
    res.writeHead(403, { "content-type": "application/json" });
    res.end(
      JSON.stringify({ message: "this service account's role is caller", code: "forbidden" }),
    );
  });
  await new Promise<void>((resolve) => plane.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(plane.address() as AddressInfo).port}`;
  try {
    const refused = await runlet(["redeliver", "--failed"], { ...env, [ENV.baseUrl]: url });
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([
      1,
      "",
      "runlet redeliver: listing the runs to deliver again failed (403): this service account's role is caller",
    ]);
  } finally {
    await new Promise((resolve) => plane.close(resolve));
  }
});

it("refuses an empty or too long --webhook-secret before it sends anything, run's too", async () => {
  // It was sent, and the run API's 400 named X-Webhook-Secret, which the command line never wrote.
  const before = secrets.length;
  for (const args of [
    ["redeliver", runId, "--app", "hello"],
    ["run", "hello", "--webhook", "https://example.com/hook"],
  ]) {
    for (const empty of ["", "  "]) {
      const refused = await runlet([...args, "--webhook-secret", empty], env);
      expect([refused.code, refused.stdout, refused.stderr]).toEqual([
        1,
        "",
        `runlet ${args[0]}: --webhook-secret is empty: give the secret, or leave the flag out (the delivery then goes unsigned)`,
      ]);
    }
  }
  const long = await runlet(["redeliver", runId, "--app", "hello"], {
    ...env,
    RUNLET_WEBHOOK_SECRET: "s".repeat(1025),
  });
  expect([long.code, long.stderr]).toEqual([
    1,
    "runlet redeliver: RUNLET_WEBHOOK_SECRET is longer than the run API's 1024 characters (1025)",
  ]);
  expect(secrets.length).toBe(before);
  // 1024 characters of two bytes each is within it, as the run API counts.
  const most = ["redeliver", runId, "--app", "hello", "--webhook-secret", "ü".repeat(1024)];
  expect((await runlet(most, env)).code).toBe(0);
  expect(secrets.splice(before)).toHaveLength(1);
  // A blank variable is no secret: the delivery goes unsigned, and the note says so.
  const blank = await runlet(["redeliver", runId, "--app", "hello"], {
    ...env,
    RUNLET_WEBHOOK_SECRET: "  ",
  });
  expect(blank.code, blank.stderr).toBe(0);
  expect(blank.stderr).toMatch(/^Note: the redelivery is unsigned/);
  expect(secrets.at(-1)).toBe("");
});

it("refuses a --webhook with credentials or port 0 in its own words before it sends anything", async () => {
  // Both came back as the run API's 400 about webhookEndpoint and X-Webhook-Secret.
  const before = secrets.length;
  const said = {
    "https://u:p@example.com/hook":
      "--webhook must not hold credentials (user:password@): sign its deliveries with --webhook-secret instead",
    "https://example.com:0/hook":
      "--webhook has port 0, which no receiver can listen on (got 'https://example.com:0/hook')",
  };
  for (const [url, message] of Object.entries(said)) {
    for (const args of [
      ["redeliver", runId, "--app", "hello"],
      ["run", "hello"],
    ]) {
      const refused = await runlet([...args, "--webhook", url, "--webhook-secret", "s"], env);
      expect([refused.code, refused.stdout, refused.stderr]).toEqual([
        1,
        "",
        `runlet ${args[0]}: ${message}`,
      ]);
    }
  }
  expect(secrets.length).toBe(before);
});
