// `--limit` of runs and audit-log is checked before any request: `runlet runs --limit abc` went
// to the server and came back as the API's 400.
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
