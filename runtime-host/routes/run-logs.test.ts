/** `GET /internal/runs/{runId}/logs` on a real host, with real replicas (replica_concurrency 2). */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HEADER } from "../../common/consts.ts";
import { DEFAULT_SANDBOX_SETTINGS, detectSandbox } from "../sandbox/sandbox.ts";
import type { RunningHost } from "../server.ts";
import {
  configOf,
  eventually,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
} from "../test-support.ts";

const APP = {
  "main.mjs": `
export async function run(input, ctx) {
  console.log("hello from", ctx.runId);
  await new Promise((r) => setTimeout(r, 50));
  console.error("a warning for", input?.name);
  return "ok";
}
export function fails() {
  return null.x;
}
export function exits() {
  process.exit(3);
}`,
};

describe("GET /internal/runs/{runId}/logs", () => {
  let home: string;
  let host: RunningHost;
  let client: ReturnType<typeof hostClient>;
  // Run ids of this file only (each host has its own store, on its home).
  const suffix = `${process.pid}${Date.now()}`;

  beforeAll(async () => {
    home = await newHome();
    host = await startTestHost(home);
    client = hostClient(host.url);
    const config = configOf("logger", { scaling: { max_replicas: 1, replica_concurrency: 2 } });
    expect((await client.deploy("prj_logs", "logger", 1, APP, config)).status).toBe(200);
  });

  afterAll(async () => {
    await host?.close();
    if (home) await removeHome(home);
  });

  const logsOf = (runId: string, token = TOKEN, query = "") =>
    fetch(`${host.url}/internal/runs/${runId}/logs${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });

  it("answers each run's own lines, for two runs at once on one replica", async () => {
    const ids = [`run_one${suffix}`, `run_two${suffix}`];
    const answers = await Promise.all(
      ids.map((runId, i) =>
        client.invoke("prj_logs", "logger", "run", JSON.stringify({ name: `caller ${i}` }), {
          [HEADER.runId]: runId,
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    for (const [i, runId] of ids.entries()) {
      const res = await logsOf(runId);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { lines: { time: string }[] };
      expect(body).toEqual({
        runId,
        lines: [
          { time: expect.any(String), stream: "stdout", text: `hello from ${runId}`, seq: 1 },
          { time: expect.any(String), stream: "stderr", text: `a warning for caller ${i}`, seq: 2 },
        ],
        truncated: false,
      });
      expect(Date.parse(body.lines[0]?.time ?? "")).toBeGreaterThan(Date.now() - 60_000);
    }
    expect((await logsOf(ids[0] ?? "", TOKEN, "?project=prj_logs")).status).toBe(200);
    const past = await logsOf(ids[0] ?? "", TOKEN, "?project=prj_logs&after=1");
    expect(((await past.json()) as { lines: { seq: number }[] }).lines).toEqual([
      expect.objectContaining({ seq: 2, stream: "stderr" }),
    ]);
    const notANumber = await logsOf(ids[0] ?? "", TOKEN, "?after=-1");
    expect([notANumber.status, ((await notANumber.json()) as { message: string }).message]).toEqual(
      [400, "after must be a line number (a whole number), not '-1'"],
    );
    // Asked for as another project's run, it does not exist.
    const other = await logsOf(ids[0] ?? "", TOKEN, "?project=prj_other");
    expect(other.status).toBe(404);
  });

  it("has a thrown error's stack, where the caller gets its message alone", async () => {
    const runId = `run_stack${suffix}`;
    const answer = await client.invoke("prj_logs", "logger", "fails", "{}", {
      [HEADER.runId]: runId,
    });
    expect(answer.body).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/null/) },
    });
    const { lines } = (await (await logsOf(runId)).json()) as {
      lines: Array<{ stream: string; text: string }>;
    };
    const text = lines
      .filter((l) => l.stream === "stderr")
      .map((l) => l.text)
      .join("\n");
    expect(text).toMatch(/^TypeError: Cannot read properties of null/);
    expect(text).toMatch(/at fails \(\.\/main\.mjs:\d+:\d+\)/); // the app's path, not the host's
    expect(text).not.toMatch(/shim\.mjs|runtime-host/); // nor the frames of Runlet's own shim
  });

  it("ends a run whose function exited its process with how it exited, not 'stopped'", async () => {
    // Sandboxed: the replica's output closes after the pool has stopped the replica (already
    // gone), which made its runs' last line read "the replica was stopped (code 3)".
    const sandboxed = await newHome();
    const own = await startTestHost(sandboxed, {
      sandbox: detectSandbox(DEFAULT_SANDBOX_SETTINGS),
    });
    try {
      const ownClient = hostClient(own.url);
      expect((await ownClient.deploy("prj_logs", "logger", 1, APP)).status).toBe(200);
      const runId = `run_exit${suffix}`;
      await ownClient.invoke("prj_logs", "logger", "exits", "{}", { [HEADER.runId]: runId });
      const last = async () => {
        const res = await fetch(`${own.url}/internal/runs/${runId}/logs`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        const { lines } = (await res.json()) as { lines?: Array<{ text: string }> };
        return lines?.at(-1)?.text ?? "";
      };
      // (Its status as the host sees it through the sandbox's processes: code 3, or the kill of
      // the sandbox's group that follows.)
      expect(await eventually(last, (text) => text.startsWith("runlet: "))).toMatch(
        /^runlet: the function's process exited \((code 3|signal SIGKILL)\) before this run finished$/,
      );
    } finally {
      await own.close();
      await removeHome(sandboxed);
    }
  });

  it("answers 404 {message} for an unknown run and 401 without the internal token", async () => {
    const unknown = await logsOf(`run_unknown${suffix}`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { message: string }).message).toMatch(
      /^no logs of run 'run_unknown\w+' on this runtime host: it keeps those of its latest 500 runs of managed-runtime apps only \(at most 128 MiB, on its disk, across its restarts\)$/,
    );
    expect((await logsOf(`run_unknown${suffix}`, "wrong-token")).status).toBe(401);
  });

  // Last: it restarts the file's host.
  it("answers a run's log after the host restarted on its home, as before the restart", async () => {
    const runId = `run_restart${suffix}`;
    const answer = await client.invoke("prj_logs", "logger", "run", '{"name":"Ada"}', {
      [HEADER.runId]: runId,
    });
    expect(answer.status).toBe(200);
    const before = await (await logsOf(runId)).json();
    await host.close();
    host = await startTestHost(home);
    // Until 2026-11-27: 404 "… it keeps the latest runs of managed-runtime apps only, in memory".
    const after = await logsOf(runId, TOKEN, "?project=prj_logs");
    expect(after.status).toBe(200);
    expect(await after.json()).toEqual(before);
    expect(before).toMatchObject({
      lines: [{ text: `hello from ${runId}` }, { text: "a warning for Ada" }],
    });
    expect((await logsOf(runId, TOKEN, "?project=prj_other")).status).toBe(404);
  });
});
