import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import { INTERNAL_TOKEN } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
});

afterAll(() => f?.cleanup());

const report = (
  runId: string,
  body: Record<string, unknown>,
  token: string | null = INTERNAL_TOKEN,
) => f.call("PUT", `/internal/runs/${runId}`, { token, body });

const run = (over: Record<string, unknown> = {}) => ({
  projectId: f.projectId,
  app: "hello",
  function: "run",
  async: false,
  status: "success",
  createdAt: Date.now(),
  finishedAt: Date.now(),
  runTimeMs: 1.25,
  ...over,
});

describe("runs index: a run's webhook", () => {
  it("keeps the run's final status and still takes how its delivery ended; pending never comes back", async () => {
    const id = newId("run");
    const batch = (over: Record<string, unknown>) =>
      f.call("POST", "/internal/runs", {
        token: INTERNAL_TOKEN,
        body: { runs: [{ id, ...run(over) }] },
      });
    const read = async () =>
      (await (await f.call("GET", `/v2/projects/${f.projectId}/runs/${id}`)).json()) as {
        status: string;
        webhook: unknown;
      };
    expect((await batch({})).status).toBe(200);
    expect((await read()).webhook).toBeNull();
    await batch({ status: "failure", webhook: { state: "pending", attempts: 0 } });
    expect(await read()).toMatchObject({
      status: "success",
      webhook: { state: "pending", attempts: 0 },
    });
    await batch({ webhook: { state: "delivered", attempts: 2 } });
    await batch({ webhook: { state: "pending", attempts: 1 } });
    expect(await read()).toMatchObject({
      status: "success",
      webhook: { state: "delivered", attempts: 2 },
    });
    const listed = await f.call("GET", `/v2/projects/${f.projectId}/runs?limit=200`);
    const { runs } = (await listed.json()) as { runs: Array<{ id: string; webhook: unknown }> };
    expect(runs.find((r) => r.id === id)?.webhook).toEqual({ state: "delivered", attempts: 2 });
  });
});

describe("runs index: ?webhook=", () => {
  it("lists only the runs whose delivery is in that state (what `runlet redeliver --failed` sends again)", async () => {
    const app = `hooks${Date.now()}`;
    const ids = { failed: newId("run"), delivered: newId("run"), none: newId("run") };
    const runs = [
      { id: ids.failed, ...run({ app, webhook: { state: "failed", attempts: 3 } }) },
      { id: ids.delivered, ...run({ app, webhook: { state: "delivered", attempts: 1 } }) },
      { id: ids.none, ...run({ app }) },
    ];
    const posted = await f.call("POST", "/internal/runs", {
      token: INTERNAL_TOKEN,
      body: { runs },
    });
    expect(posted.status).toBe(200);
    const list = async (query: string) => {
      const res = await f.call("GET", `/v2/projects/${f.projectId}/runs?app=${app}&${query}`);
      return { status: res.status, body: (await res.json()) as { runs?: Array<{ id: string }> } };
    };
    expect((await list("webhook=failed")).body.runs?.map((r) => r.id)).toEqual([ids.failed]);
    expect((await list("webhook=delivered")).body.runs?.map((r) => r.id)).toEqual([ids.delivered]);
    expect(await list("webhook=lost")).toMatchObject({
      status: 400,
      body: { message: expect.stringContaining("pending, delivered, failed") },
    });
  });
});

describe("runs index: reports from the worker", () => {
  it("takes reports only with the internal token", async () => {
    const id = newId("run");
    expect((await report(id, run(), null)).status).toBe(401);
    expect((await report(id, run(), f.owner.token)).status).toBe(401);
    expect((await report(id, run())).status).toBe(204);
  });

  it("refuses a bad report with 400 and an unknown project with 404", async () => {
    expect((await report("not-a-run", run())).status).toBe(400);
    const bad = await report(newId("run"), run({ status: "done" }));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/^status: /);
    expect((await report(newId("run"), run({ extra: 1 }))).status).toBe(400);
    expect((await report(newId("run"), run({ projectId: "prj_nope" }))).status).toBe(404);
  });

  it("moves a run forward but never back out of a final state", async () => {
    const id = newId("run");
    await report(id, run({ async: true, status: "queued", finishedAt: null, runTimeMs: null }));
    await report(id, run({ async: true, status: "failure" }));
    await report(id, run({ async: true, status: "running", finishedAt: null }));
    const res = await f.call("GET", `/v2/projects/${f.projectId}/runs?async=true`);
    const { runs } = (await res.json()) as { runs: { id: string; status: string }[] };
    expect(runs.find((r) => r.id === id)?.status).toBe("failure");
  });

  it("never moves a run back from running to queued (a shard's report of the acceptance may come late)", async () => {
    const id = newId("run");
    const batch = (status: string) =>
      f.call("POST", "/internal/runs", {
        token: INTERNAL_TOKEN,
        body: {
          runs: [{ id, ...run({ async: true, status, finishedAt: null, runTimeMs: null }) }],
        },
      });
    const statusNow = async () => {
      const res = await f.call("GET", `/v2/projects/${f.projectId}/runs/${id}`);
      return ((await res.json()) as { status: string }).status;
    };
    await batch("queued");
    expect(await statusNow()).toBe("queued");
    await batch("running"); // the host started it
    await batch("queued"); // the shard's report of its acceptance, late
    expect(await statusNow()).toBe("running");
  });

  it("lets the Worker's end replace the end the host reported, never the other way", async () => {
    const id = newId("run");
    const host = (status: string) =>
      f.call("POST", "/internal/runs", {
        token: INTERNAL_TOKEN,
        body: { runs: [{ id, ...run({ async: true, status }) }] },
      });
    const statusNow = async () => {
      const res = await f.call("GET", `/v2/projects/${f.projectId}/runs/${id}`);
      return ((await res.json()) as { status: string }).status;
    };
    await host("success");
    await report(id, run({ async: true, status: "cancelled" })); // cancelled as it finished
    expect(await statusNow()).toBe("cancelled");
    await host("success"); // the host's report, sent again late
    expect(await statusNow()).toBe("cancelled");
    await report(id, run({ async: true, status: "running", finishedAt: null }));
    expect(await statusNow()).toBe("cancelled");
  });
});

describe("GET /v2/projects/{id}/runs", () => {
  it("lists newest first with filters and keyset pages, for members too", async () => {
    const project = await f.addProject();
    const base = Date.now() - 60_000;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const id = newId("run", base + i);
      ids.push(id);
      const res = await report(
        id,
        run({
          projectId: project,
          createdAt: base + i,
          app: i % 2 ? "odd" : "even",
          status: i === 3 ? "failure" : "success",
        }),
      );
      expect(res.status).toBe(204);
    }
    const seen: string[] = [];
    let next: string | undefined;
    for (let page = 0; page < 10; page++) {
      const q = `limit=3${next ? `&nextToken=${next}` : ""}`;
      const res = await f.call("GET", `/v2/projects/${project}/runs?${q}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        runs: { id: string }[];
        hasMore: boolean;
        nextPageToken?: string;
      };
      seen.push(...body.runs.map((r) => r.id));
      if (!body.hasMore) {
        expect(body).not.toHaveProperty("nextPageToken");
        break;
      }
      next = body.nextPageToken;
    }
    expect(seen).toEqual([...ids].reverse());

    const odd = await f.call("GET", `/v2/projects/${project}/runs?app=odd&status=success`);
    const oddRuns = (
      (await odd.json()) as {
        runs: { app: string; status: string; function: string; runTimeMs: number }[];
      }
    ).runs;
    expect(oddRuns.map((r) => [r.app, r.status])).toEqual([
      ["odd", "success"],
      ["odd", "success"],
    ]);
    expect(oddRuns[0]).toMatchObject({ function: "run", runTimeMs: 1.25 });
  });

  it("names the statuses a bad one is not, and the one it likely meant", async () => {
    const message = async (q: string) => {
      const res = await f.call("GET", `/v2/projects/${f.projectId}/runs?${q}`);
      expect(res.status, q).toBe(400);
      return ((await res.json()) as { message: string }).message;
    };
    const statuses = "must be one of queued, running, success, failure, cancelled";
    // It named the values alone: `failed` (Replicate's word, and a webhook state) left a guess.
    expect(await message("status=failed")).toBe(`status: ${statuses} (did you mean 'failure'?)`);
    expect(await message("status=Canceled")).toBe(
      `status: ${statuses} (did you mean 'cancelled'?)`,
    );
    expect(await message("status=runing")).toBe(`status: ${statuses} (did you mean 'running'?)`);
    expect(await message("status=bogus")).toBe(`status: ${statuses}`);
    expect(await message("webhook=failure")).toBe(
      "webhook: must be one of pending, delivered, failed, cancelled (did you mean 'failed'?)",
    );
  });

  it("names a query parameter it does not take as one, and where a page token goes", async () => {
    // They read "unknown field 'nextPageToken'": the answer's name for the token sent back.
    const said = async (q: string) => {
      const res = await f.call("GET", `/v2/projects/${f.projectId}/runs?${q}`);
      expect(res.status, q).toBe(400);
      return ((await res.json()) as { message: string }).message;
    };
    expect(await said("colour=red")).toBe("unknown query parameter 'colour'");
    for (const name of ["nextPageToken", "pageToken", "cursor"])
      expect(await said(`${name}=x`)).toBe(
        `unknown query parameter '${name}': the next page is ?nextToken=, given the answer's nextPageToken`,
      );
  });

  it("answers 400 for bad filters, 403 to outsiders, 401 without a token", async () => {
    for (const q of ["status=done", "async=yes", "limit=0", "limit=1.5", "colour=red"]) {
      const res = await f.call("GET", `/v2/projects/${f.projectId}/runs?${q}`);
      expect(res.status, q).toBe(400);
    }
    const member = await f.call("GET", `/v2/projects/${f.projectId}/runs`, {
      token: f.member.token,
    });
    expect(member.status).toBe(200);
    const outsider = await f.call("GET", `/v2/projects/${f.projectId}/runs`, {
      token: f.outsider.token,
    });
    expect(outsider.status).toBe(403);
    expect((await f.call("GET", `/v2/projects/${f.projectId}/runs`, { token: null })).status).toBe(
      401,
    );
  });
});

describe("GET /v2/projects/{id}/runs/{run_id}", () => {
  it("shows one run of the project; another project's run is 404", async () => {
    const id = newId("run");
    await report(id, run({ app: "single", status: "failure", runTimeMs: 7 }));
    const res = await f.call("GET", `/v2/projects/${f.projectId}/runs/${id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      id,
      app: "single",
      async: false,
      status: "failure",
      runTimeMs: 7,
    });
    const other = await f.addProject();
    const theirs = await f.call("GET", `/v2/projects/${other}/runs/${id}`);
    expect(theirs.status).toBe(404);
    // Also the answer for a sync run still running, which the index has not been told of yet.
    expect(((await theirs.json()) as { message: string }).message).toBe(
      `run '${id}' not found in project '${other}' (a sync run is listed once it has been on its replica for a second, or has answered)`,
    );
    expect((await f.call("GET", `/v2/projects/${f.projectId}/runs/not-a-run`)).status).toBe(400);
  });
});

describe("runs index: batched reports", () => {
  const batch = (runs: unknown[], token: string | null = INTERNAL_TOKEN) =>
    f.call("POST", "/internal/runs", { token, body: { runs } });

  it("records many runs in one call, skips unknown projects, refuses bad batches", async () => {
    const [a, b, c] = [newId("run"), newId("run"), newId("run")];
    const res = await batch([
      { id: a, ...run({ app: "batched" }) },
      { id: b, ...run({ app: "batched", status: "failure" }) },
      { id: c, ...run({ projectId: "prj_gone" }) },
    ]);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ recorded: 2, skipped: 1 });
    const listed = await f.call("GET", `/v2/projects/${f.projectId}/runs?app=batched`);
    const { runs } = (await listed.json()) as { runs: { id: string; status: string }[] };
    expect(runs.map((r) => [r.id, r.status]).sort()).toEqual(
      [
        [a, "success"],
        [b, "failure"],
      ].sort(),
    );
    expect((await batch([{ id: newId("run"), ...run() }], null)).status).toBe(401);
    expect((await batch([])).status).toBe(400);
  });

  it("keeps a failed run's message, cut at 1,000 characters, and shows it as error", async () => {
    const [short, long] = [newId("run"), newId("run")];
    const res = await batch([
      { id: short, ...run({ app: "errs", status: "failure", error: "it broke" }) },
      { id: long, ...run({ app: "errs", status: "failure", error: "x".repeat(3000) }) },
    ]);
    expect(res.status).toBe(200);
    const listed = await f.call("GET", `/v2/projects/${f.projectId}/runs?app=errs`);
    const { runs } = (await listed.json()) as {
      runs: Array<{ id: string; error?: { message: string } }>;
    };
    expect(runs.find((r) => r.id === short)?.error).toEqual({ message: "it broke" });
    expect(runs.find((r) => r.id === long)?.error?.message).toBe(`${"x".repeat(999)}…`);
  });

  it("records the rest of a batch when one report cannot be taken, and cuts a long name", async () => {
    const [ok, long] = [newId("run"), newId("run")];
    const path = `GET /p${"x".repeat(300)}`; // a custom app's request to a long path
    const res = await batch([
      { id: "nope", ...run() },
      { id: ok, ...run({ app: "mixed" }) },
      { id: newId("run"), ...run({ app: "mixed", status: "exploded" }) },
      { id: long, ...run({ app: "mixed", function: path }) },
    ]);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ recorded: 2, skipped: 2 });
    const listed = await f.call("GET", `/v2/projects/${f.projectId}/runs?app=mixed`);
    const { runs } = (await listed.json()) as { runs: { id: string; function: string }[] };
    expect(runs.map((r) => r.id).sort()).toEqual([ok, long].sort());
    expect(runs.find((r) => r.id === long)?.function).toBe(`${path.slice(0, 255)}…`);
  });
});
