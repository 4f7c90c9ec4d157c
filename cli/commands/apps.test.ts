import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { runlet } from "./test-support.ts";

it("lists and shows apps of a control plane older than the CLI, whose answers have no runs", async () => {
  // `runlet apps` and `apps show` failed with "Cannot read properties of undefined (reading
  // 'queued')" against a control plane from before the apps' queue was counted.
  const app = {
    name: "hello",
    version: 3,
    runtime: "managed",
    updatedAt: "2026-11-25T00:00:00.000Z",
    scaling: { minReplicas: 0, maxReplicas: 2, replicaConcurrency: 1, capacity: 2, cooldown: 60 },
    responseGracePeriod: 600,
    queueTimeout: 86_400,
  };
  const replicas = {
    host: "reachable",
    replicas: { starting: 0, idle: 1, busy: 0 },
    queued: 0,
    hosts: [],
  };
  const answers: Record<string, unknown> = {
    "/v2/projects/prj_1/apps": { apps: [app] },
    "/v2/projects/prj_1/apps/hello": app,
    "/v2/projects/prj_1/apps/hello/replicas": replicas,
  };
  const server = createServer((req, res) => {
    const body = answers[req.url ?? ""];
    res.writeHead(body ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(body ?? { message: "not here" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    const listed = await runlet(["apps"], env);
    expect(listed.code, listed.stderr).toBe(0);
    // Under a header row, as runs, projects, tokens and secrets have theirs (it had none).
    expect(listed.stdout.split("\n")).toEqual([
      expect.stringMatching(/^NAME\s+VERSION\s+RUNTIME\s+ASYNC RUNS\s+DEPLOYED$/),
      expect.stringMatching(/^hello\s+v3\s+managed\s+\? queued\s+2026-11-25/),
    ]);
    const shown = await runlet(["apps", "show", "hello"], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(
      /async runs\s+not said by this control plane \(older than this CLI\)/,
    );
    expect(shown.stdout).toMatch(/replicas now\s+0 starting, 1 idle, 0 busy/);
    // Nor functions: not known, and said so.
    expect(shown.stdout).toMatch(/functions\s+not known \(deployed without the start check/);
    // No start_timeout in its answer: the limit it had, 30 s.
    expect(shown.stdout).toMatch(
      /limits\s+response_grace_period 600 s, queue_timeout 86400 s, start_timeout 30 s/,
    );
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
