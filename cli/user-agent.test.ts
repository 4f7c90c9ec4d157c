// Every request of the CLI says who sent it, `runlet-cli/<version> (node <version>)`: the audit
// log records each request's User-Agent, and it had none for a deploy (sent by node:http) and
// `node` for the rest.
import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { ENV } from "../common/consts.ts";
import { runlet } from "./commands/test-support.ts";
import { VERSION } from "./version.ts";

it("sends the CLI's User-Agent on a deploy, an ordinary command and a run", async () => {
  const root = await realpath(await mkdtemp(join(tmpdir(), "runlet-user-agent-")));
  await writeFile(join(root, "runlet.toml"), 'name = "hello"\n');
  await writeFile(join(root, "main.mjs"), "export const run = () => 1;\n");
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url?.split("?")[0]} ${req.headers["user-agent"]}`);
    res.writeHead(req.method === "POST" ? 201 : 200, {
      "content-type": "application/json",
      "x-request-id": "run_01m8cw5v4g64a9c9brt5eearq2",
    });
    if (req.url?.startsWith("/v4/"))
      return res.end(JSON.stringify({ run_id: "run_01m8cw5v4g64a9c9brt5eearq2", result: 1 }));
    if (req.method === "GET") return res.end(JSON.stringify({ apps: [], hasMore: false }));
    const app = { id: "app_1", name: "hello", runtime: "managed", version: 1, files: 2 };
    res.end(JSON.stringify({ ...app, bytes: 50, deployedAt: "2026-11-27T00:00:00.000Z" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    for (const argv of [["deploy", root, "--no-start-check"], ["apps"], ["run", "hello"]]) {
      const done = await runlet(argv, env);
      expect(done.code, done.stderr).toBe(0);
    }
    const agent = `runlet-cli/${VERSION} (node ${process.version})`;
    expect(seen).toEqual([
      `POST /v2/projects/prj_1/apps ${agent}`,
      `GET /v2/projects/prj_1/apps ${agent}`,
      `POST /v4/prj_1/hello/run ${agent}`,
    ]);
  } finally {
    await new Promise((resolve) => server.close(resolve));
    await rm(root, { recursive: true, force: true });
  }
});
