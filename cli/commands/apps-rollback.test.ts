// `runlet apps rollback` against a stand-in control plane: which version it asks for, and what it
// says. The whole path, on a real stack, is test/rollback.test.ts.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { runlet } from "./test-support.ts";

let versions: number[] = [];
const asked: string[] = [];
let server: ReturnType<typeof createServer>;
let env: Record<string, string>;

beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.url === "/v2/projects/prj_1/apps/hello/versions?limit=10")
      return send(200, { versions: versions.map((version) => ({ version, kept: true })) });
    const redeploy = /^\/v2\/projects\/prj_1\/apps\/hello\/versions\/(\d+)\/redeploy/.exec(
      req.url ?? "",
    );
    if (req.method === "POST" && redeploy)
      return send(201, {
        id: "app_1",
        name: "hello",
        runtime: "managed",
        version: (versions[0] ?? 0) + 1,
        files: 2,
        bytes: 64,
        deployedAt: "2026-11-27T00:00:00.000Z",
        started: req.url?.endsWith("?startCheck=false") ? null : { host: "hst_1", ms: 12 },
      });
    send(404, { message: "not here" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
beforeEach(() => {
  asked.length = 0;
});

it("rolls back to the version before the live one without --to", async () => {
  versions = [5, 4];
  const rolled = await runlet(["apps", "rollback", "hello"], env);
  expect(rolled.code, rolled.stderr).toBe(0);
  expect(asked).toEqual([
    "GET /v2/projects/prj_1/apps/hello/versions?limit=10",
    "POST /v2/projects/prj_1/apps/hello/versions/4/redeploy",
  ]);
  expect(rolled.stdout).toMatch(
    /^Rolled hello back to version 4's code as version 6 \(managed runtime\) in \d+ ms$/,
  );
  expect(rolled.stderr).toContain("Rolling hello back to version 4's code (project prj_1)…");
  expect(rolled.stderr).toContain(
    "Its replica started in 12 ms (runtime host hst_1) and takes its first call.",
  );
});

it("rolls back to --to N, without the start check when told, and prints the answer with --json", async () => {
  versions = [5, 4];
  const rolled = await runlet(
    ["apps", "rollback", "hello", "--to", "2", "--no-start-check", "--json"],
    env,
  );
  expect(rolled.code, rolled.stderr).toBe(0);
  expect(asked).toEqual([
    "POST /v2/projects/prj_1/apps/hello/versions/2/redeploy?startCheck=false",
  ]);
  expect(JSON.parse(rolled.stdout)).toMatchObject({ version: 6, started: null, rolledBackFrom: 2 });
});

it("refuses what it cannot roll back to before asking for it", async () => {
  versions = [1];
  const alone = await runlet(["apps", "rollback", "hello"], env);
  expect(alone.code).toBe(1);
  expect(alone.stderr).toContain(
    "hello has one version only (v1): there is no earlier one to roll back to",
  );
  const typo = await runlet(["apps", "rollback", "hello", "--to", "v2"], env);
  expect(typo.code).toBe(1);
  expect(typo.stderr).toContain("--to takes a version number (1, 2, …), not 'v2'");
  const other = await runlet(["apps", "show", "hello", "--to", "2"], env);
  expect(other.code).toBe(1);
  expect(other.stderr).toContain("apps show takes no --to");
  expect(asked).toEqual(["GET /v2/projects/prj_1/apps/hello/versions?limit=10"]);
});
