import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { newId } from "../../common/ids.ts";
import { runlet } from "./test-support.ts";

const runId = newId("run");
/** The X-Webhook-Secret of each delivery asked for ("" for none). */
const secrets: string[] = [];
let server: ReturnType<typeof createServer>;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  // The run API's answer to a redelivery: the run, its new delivery pending.
  server = createServer((req, res) => {
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
