// An async run its shard cannot record (worker/runs/not-recorded.ts): the shard's storage made
// full for real — SQLite's max_page_count, set through workerd's own test hook
// (`setMaxPageCountForTest`, there with the `experimental` compatibility flag vitest.config.ts
// gives this project) at each shard's size, so the run's row does not fit. Before the fix the
// caller got `500 internal error`.
import { fetchMock, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { SHARDS } from "../runs/limits.ts";
import { shardNamed, sql } from "../runs/test-support.ts";
import {
  appIsDeployed,
  CONTROL,
  call,
  expectUpstreamsUsed,
  HOST,
  PROJECT,
  setUpUpstreams,
  sign,
} from "./test-support.ts";

beforeAll(() => {
  setUpUpstreams();
  // The shard goes on after the test: it asks the registry where to hand its run over (none
  // registered: the Worker's RUNTIME_HOST_URL) and reports it to the runs index. Alone in its
  // project, no other file's answers stand for these (an unanswered one failed the run).
  fetchMock.get(CONTROL).intercept({ path: "/internal/hosts" }).reply(200, { hosts: [] }).persist();
  fetchMock
    .get(CONTROL)
    .intercept({ path: "/internal/runs", method: "POST" })
    .reply(200, {})
    .persist();
});
afterEach(expectUpstreamsUsed);

type TestSql = SqlStorage & { setMaxPageCountForTest(pages: number): void };

describe("a run store that cannot record the run", () => {
  it("answers 507 {message}: the run was not accepted, nothing of it or its key was kept, and the same submission is taken once there is room", async () => {
    const app = "full-store";
    /** Caps each shard's storage at `pages(its size now)` pages (a new stub: one reset is broken). */
    const cap = async (pages: (now: number) => number) => {
      for (let k = 0; k < SHARDS; k++)
        await runInDurableObject(shardNamed(app, k, PROJECT), (_, state) => {
          const store = state.storage.sql as TestSql;
          store.setMaxPageCountForTest(pages(Math.ceil(store.databaseSize / 4096)));
        });
    };
    await cap((now) => now);
    const headers = {
      authorization: `Bearer ${await sign()}`,
      "idempotency-key": "order-7",
    };
    const body = JSON.stringify({ text: "x".repeat(100_000) });
    appIsDeployed(app);
    const path = `/v4/${PROJECT}/${app}/run?async=true`;
    const refused = await call(path, { headers, body });
    expect(refused.res.status).toBe(507);
    expect(refused.body).toEqual({
      message:
        "the run was not accepted: the run store is full (database or disk is full), so it could not record the run; free space where the Worker keeps its state (RUNLET_HOME locally), then submit it again",
      code: "insufficient_storage",
      run_id: refused.res.headers.get("X-Request-Id"),
    });
    // A stub of the reset object stays broken: read each shard through a new one.
    for (let k = 0; k < SHARDS; k++) {
      const shard = shardNamed(app, k, PROJECT);
      expect(await sql(shard, "SELECT id FROM runs")).toEqual([]);
      expect(await sql(shard, "SELECT key_hash FROM idempotency_keys")).toEqual([]);
    }

    // Room again: the same submission, key and all, is a new run, not a replay.
    await cap(() => 1_000_000);
    fetchMock
      .get(HOST)
      .intercept({
        path: (p) => p.startsWith(`/internal/async/${PROJECT}/${app}/`),
        method: "POST",
      })
      .reply(202, { status: "running", startedAt: Date.now(), deadlineAt: Date.now() + 60_000 });
    const taken = await call(path, { headers, body });
    expect(taken.res.status).toBe(202);
    expect(taken.res.headers.get("Idempotent-Replayed")).toBeNull();
    expect(taken.body.run_id).not.toBe(refused.body.run_id);
  });
});
