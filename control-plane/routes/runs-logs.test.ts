import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../cli/processes.ts";
import { newId } from "../../common/ids.ts";
import type { RunLogs } from "../../common/protocol/host.ts";
import { auditLog } from "../db/schema.ts";
import { httpRuntimeHosts, type RuntimeHosts } from "../host-client.ts";
import { INTERNAL_TOKEN, noRuntimeHosts } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

type Body = { message?: string } & Partial<RunLogs>;

/** A runtime host that keeps the logs it is given, and notes what it was asked. */
const kept = new Map<string, RunLogs & { project: string }>();
const asked: string[] = [];
const fakeHost: RuntimeHosts = {
  start: noRuntimeHosts.start,
  announce: () => Promise.resolve(),
  remove: () => Promise.resolve(),
  async runLogs({ project, runId }) {
    asked.push(runId);
    const logs = kept.get(runId);
    if (!logs || logs.project !== project) return undefined;
    return { runId: logs.runId, lines: logs.lines, truncated: logs.truncated };
  },
  replicas: () => Promise.resolve(undefined),
  secretsChanged: async () => {},
  output: async () => ({ replicas: [], unreachable: 0 }),
};

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture({ hosts: fakeHost });
});

afterAll(() => f?.cleanup());

/** A run in the runs index of `projectId` (as the Worker reports it), with logs on the host. */
async function runOf(
  projectId: string,
  opts: {
    logs?: boolean;
    status?: string;
    fn?: string;
    ran?: false;
    host?: string;
    error?: string;
  } = {},
): Promise<string> {
  const id = newId("run");
  const queued = opts.status === "queued";
  const res = await f.call("PUT", `/internal/runs/${id}`, {
    token: INTERNAL_TOKEN,
    body: {
      projectId,
      app: "hello",
      function: opts.fn ?? "run",
      async: queued,
      status: opts.status ?? "success",
      createdAt: Date.now(),
      finishedAt: queued ? null : Date.now(),
      runTimeMs: queued || opts.ran === false ? null : 3,
      ...(opts.host ? { host: opts.host } : {}),
      ...(opts.error ? { error: opts.error } : {}),
    },
  });
  expect(res.status).toBe(204);
  if (opts.logs !== false) {
    kept.set(id, {
      project: projectId,
      runId: id,
      lines: [
        { time: "2026-01-02T03:04:05.006Z", stream: "stdout", text: `hello from ${id}` },
        { time: "2026-01-02T03:04:05.007Z", stream: "stderr", text: "careful" },
      ],
      truncated: false,
    });
  }
  return id;
}

const logsPath = (projectId: string, runId: string) =>
  `/v2/projects/${projectId}/runs/${runId}/logs`;

describe("GET /v2/projects/{id}/runs/{runId}/logs", () => {
  it("answers the host's lines to owners and members, without an audit entry", async () => {
    const id = await runOf(f.projectId);
    for (const token of [f.owner.token, f.member.token]) {
      const res = await f.call("GET", logsPath(f.projectId, id), { token });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        runId: id,
        lines: [
          { time: "2026-01-02T03:04:05.006Z", stream: "stdout", text: `hello from ${id}` },
          { time: "2026-01-02T03:04:05.007Z", stream: "stderr", text: "careful" },
        ],
        truncated: false,
      });
      const requestId = res.headers.get("x-request-id") ?? "";
      const entries = await f.db.select().from(auditLog).where(eq(auditLog.requestId, requestId));
      expect(entries).toEqual([]);
    }
  });

  it("answers 404 for a run of another project, without asking the host", async () => {
    const theirs = await runOf(f.outsiderProjectId);
    asked.length = 0;
    const res = await f.call("GET", logsPath(f.projectId, theirs));
    expect(res.status).toBe(404);
    expect(((await res.json()) as Body).message).toBe(
      `run '${theirs}' not found in project '${f.projectId}'`,
    );
    expect(asked).toEqual([]);
    // Its owner reads it.
    const own = await f.call("GET", logsPath(f.outsiderProjectId, theirs), {
      token: f.outsider.token,
    });
    expect(own.status).toBe(200);
  });

  it("answers 404 for an unknown run, and for a run whose logs the host no longer has", async () => {
    expect((await f.call("GET", logsPath(f.projectId, newId("run")))).status).toBe(404);
    const forgotten = await runOf(f.projectId, { logs: false });
    const res = await f.call("GET", logsPath(f.projectId, forgotten));
    expect(res.status).toBe(404);
    expect(((await res.json()) as Body).message).toBe(
      `no logs of run '${forgotten}': the runtime hosts keep the logs of their latest 500 runs of managed-runtime apps only (at most 128 MiB each, on its disk, across its restarts): a run that wrote nothing keeps no file there, so once its host has restarted it is not known from one whose logs were dropped for later runs; or the host that ran it is down or gone`,
    );
    // Why not, where it can be said: it has not run, or a custom app's request has none.
    const waiting = await runOf(f.projectId, { logs: false, status: "queued" });
    const notYet = await f.call("GET", logsPath(f.projectId, waiting));
    expect(((await notYet.json()) as Body).message).toBe(
      `no logs of run '${waiting}': it has not started yet (queued)`,
    );
    const expired = await runOf(f.projectId, { logs: false, status: "failure", ran: false });
    const never = await f.call("GET", logsPath(f.projectId, expired));
    expect(((await never.json()) as Body).message).toBe(
      `no logs of run '${expired}': it ended (failure) without running on a runtime host`,
    );
    // Its app failed to start on the host: what it wrote is its replica's (`logs --app`).
    const crashed = await runOf(f.projectId, {
      ...{ logs: false, status: "failure", ran: false, host: "hst_1" },
      error: "the app failed to start: SyntaxError: Unexpected identifier 'error'",
    });
    const atStart = await f.call("GET", logsPath(f.projectId, crashed));
    expect(((await atStart.json()) as Body).message).toBe(
      `no logs of run '${crashed}': it failed on its runtime host without a run time (the app failed to start: SyntaxError: Unexpected identifier 'error'); what the app's replicas wrote is in \`runlet logs --app hello\``,
    );
    const request = await runOf(f.projectId, { logs: false, fn: "GET /items" });
    const custom = await f.call("GET", logsPath(f.projectId, request));
    expect(((await custom.json()) as Body).message).toBe(
      `no logs of run '${request}': a custom app's request writes to its replica's output, not to a run's log: it is in \`runlet logs --app hello\``,
    );
  });

  it("takes ?after as digits only, passes it to the host, and says what it takes otherwise", async () => {
    const id = await runOf(f.projectId);
    const passed: Array<number | undefined> = [];
    const runLogs = fakeHost.runLogs;
    fakeHost.runLogs = (input) => {
      passed.push(input.after);
      return runLogs(input);
    };
    try {
      for (const after of ["0", "7", "9007199254740991"])
        expect((await f.call("GET", `${logsPath(f.projectId, id)}?after=${after}`)).status).toBe(
          200,
        );
      expect(passed).toEqual([0, 7, Number.MAX_SAFE_INTEGER]);
      // `abc` read "must be a number, not a NaN"; `0x10`, `1e3` and ` 5` were taken as numbers.
      for (const after of [
        "abc",
        "",
        "-1",
        "1.5",
        "0x10",
        "1e3",
        "%205",
        "07",
        "9007199254740992",
      ]) {
        const res = await f.call("GET", `${logsPath(f.projectId, id)}?after=${after}`);
        expect(res.status, after).toBe(400);
        expect(await res.json(), after).toEqual({
          message: "after: must be a whole number, 0 or more: the seq of the last line read",
          code: "bad_request",
        });
      }
      expect(passed.length).toBe(3);
    } finally {
      fakeHost.runLogs = runLogs;
    }
  });

  it("answers 400 for what is not a run id, 403 to outsiders, 401 without a token, 404 for no project", async () => {
    const bad = await f.call("GET", logsPath(f.projectId, "not-a-run"));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Body).message).toBe(
      "runId: not a run id: a run id is 'run_' and 26 lowercase letters and digits",
    );
    const read = await f.call("GET", `/v2/projects/${f.projectId}/runs/RUN_1`);
    expect([read.status, ((await read.json()) as Body).message]).toEqual([
      400,
      "runId: not a run id: a run id is 'run_' and 26 lowercase letters and digits",
    ]);
    const id = await runOf(f.projectId);
    const outsider = await f.call("GET", logsPath(f.projectId, id), { token: f.outsider.token });
    expect(outsider.status).toBe(403);
    expect((await f.call("GET", logsPath(f.projectId, id), { token: null })).status).toBe(401);
    const forged = await f.call("GET", logsPath(f.projectId, id), { token: "not.a.token" });
    expect(forged.status).toBe(401);
    expect((await f.call("GET", logsPath("prj_nope", id))).status).toBe(404);
  });
});

describe("GET /v2/projects/{id}/runs/{runId}/logs, host unreachable", () => {
  let g: Awaited<ReturnType<typeof libsqlFixture>>;

  beforeAll(async () => {
    // A loopback port nothing listens on.
    const port = await freePort();
    g = await libsqlFixture({
      hosts: httpRuntimeHosts(
        async () => [{ id: "hst_1", address: `http://127.0.0.1:${port}`, state: "up" }],
        "t",
      ),
    });
  });

  afterAll(() => g?.cleanup());

  it("answers 502 {message}", async () => {
    const id = newId("run");
    const report = await g.call("PUT", `/internal/runs/${id}`, {
      token: INTERNAL_TOKEN,
      body: {
        projectId: g.projectId,
        app: "hello",
        function: "run",
        async: false,
        status: "failure",
        createdAt: Date.now(),
      },
    });
    expect(report.status).toBe(204);
    const res = await g.call("GET", logsPath(g.projectId, id));
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      code: "bad_gateway",
      message: expect.stringMatching(/a runtime host is not reachable/),
    });
  });
});
