// `--limit` of runs and audit-log is checked before any request: `runlet runs --limit abc` went
// to the server and came back as the API's 400. The runs table says a custom app's answer.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { runlet } from "./test-support.ts";

it("refuses a --limit that is not a whole number from 1 to 200 before asking, and sends one that is", async () => {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(req.url ?? "");
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ runs: [], logs: [], hasMore: false, retentionDays: 90 }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    for (const command of ["runs", "audit-log"]) {
      for (const limit of ["abc", "0", "201", "1.5", "-3", "1e2", ""]) {
        const done = await runlet([command, `--limit=${limit}`, "--json"], env);
        expect(done.code, `${command} --limit ${limit}`).toBe(1);
        expect(JSON.parse(done.stdout)).toEqual({
          message: `--limit takes a whole number from 1 to 200 (got '${limit}')`,
        });
        expect(done.stderr).toBe(
          `runlet ${command}: --limit takes a whole number from 1 to 200 (got '${limit}')`,
        );
      }
      expect(asked).toEqual([]);
      for (const limit of ["1", "200"]) {
        const done = await runlet([command, "--limit", limit, "--json"], env);
        expect(done.code, done.stderr).toBe(0);
      }
      expect(asked.map((path) => new URL(path, url).searchParams.get("limit"))).toEqual([
        "1",
        "200",
      ]);
      asked.length = 0;
    }
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

it("says in the table a custom app's answer outside 2xx, its columns aligned, --json as listed", async () => {
  const run = (id: string, statusCode?: number) => ({
    id,
    app: "web",
    function: "GET /",
    async: false,
    status: "success",
    createdAt: "2026-11-27T10:00:00.000Z",
    finishedAt: "2026-11-27T10:00:00.010Z",
    runTimeMs: 10,
    host: null,
    webhook: null,
    ...(statusCode === undefined ? {} : { statusCode }),
  });
  const page = {
    runs: [run("run_1", 404), run("run_2", 200), run("run_3")],
    hasMore: false,
  };
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(page));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    const table = await runlet(["runs"], env);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    // It read `success` alone, as the 200's did.
    expect(lines[1]).toMatch(/^run_1 +web +GET \/ +sync +success \(answered 404\) +2026-/);
    expect(lines[2]).toMatch(/ success +2026-/);
    expect(lines[3]).toMatch(/ success +2026-/);
    const at = (line: string | undefined) => line?.indexOf("2026-");
    expect(new Set(lines.slice(1).map(at)).size).toBe(1);
    expect(lines[0]?.indexOf("CREATED")).toBe(at(lines[1]));
    const json = await runlet(["runs", "--json"], env);
    expect(JSON.parse(json.stdout)).toEqual(page);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
