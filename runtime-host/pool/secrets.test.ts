// A project's secrets changed (`runlet secrets set`): the pool replaces its apps' replicas that
// read them before, as a redeploy does. Calls on them finish, then they stop; new calls go to
// replicas that read the values as they are now. On in-memory replicas that read the project's
// secrets as a real one does, as they start.
import { afterEach, describe, expect, it } from "vitest";
import { type PoolTarget, ReplicaPool } from "./pool.ts";
import { FakeReplica, fakeTarget } from "./test-support.ts";

let pool: ReplicaPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

function setUp(scaling: Record<string, number> = {}) {
  /** The control plane's secrets of project `p` now: a replica reads them as it starts. */
  const project = { value: "old", revision: 1 };
  /** Each replica started, with the value it read (once it read it). */
  const started: Array<{ replica: FakeReplica; value?: string }> = [];
  /** The next replica's read of the secrets waits for this, when set. */
  let holdRead: Promise<void> | undefined;
  pool = new ReplicaPool(
    (target) => {
      const entry: { replica: FakeReplica; value?: string } = {
        replica: new FakeReplica({
          ...target,
          secrets: async () => {
            const read = { env: { API_KEY: project.value }, revision: project.revision };
            await holdRead;
            entry.value = read.env.API_KEY;
            return read;
          },
        }),
      };
      started.push(entry);
      return entry.replica;
    },
    { queueWaitMs: 5_000, maxWaiting: 100 },
  );
  const target = fakeTarget({ max_replicas: 4, ...scaling });
  const p = pool;
  /** A call that holds its slot until `end()`; resolves with the value its replica read. */
  const hold = (to: PoolTarget = target) => {
    let end: () => void = () => {};
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    const done = p.use(to, async (workload) => {
      await ended;
      return started.find((s) => s.replica === workload)?.value;
    });
    return { end, done };
  };
  /** A call that ends at once: the value its replica read. */
  const call = () => {
    const one = hold();
    one.end();
    return one.done;
  };
  /** The change: the control plane's values and revision, then the host hears of it. */
  const change = (value: string) => {
    project.value = value;
    project.revision++;
    p.secretsChanged("p", project.revision);
  };
  /** The replicas started from now on read the secrets once `read` resolves. */
  const readAfter = (read: Promise<void>) => {
    holdRead = read;
  };
  return { pool: p, target, started, project, hold, call, change, readAfter };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("a change of a project's secrets", () => {
  it("sends the next calls to a new replica with the new value; the idle old one stops", async () => {
    const { started, call, change } = setUp();
    expect(await call()).toBe("old");
    expect(await call()).toBe("old"); // the same warm replica
    expect(started).toHaveLength(1);
    change("new");
    await settle();
    expect(started[0]?.replica.exited).toBe(true);
    expect(await call()).toBe("new");
    expect(await call()).toBe("new");
    expect(started).toHaveLength(2);
  });

  it("lets a call in flight finish on its replica (with the value it had), which then stops", async () => {
    const { started, hold, call, change } = setUp();
    const busy = hold();
    await settle();
    change("new");
    await settle();
    // Not cut: the busy replica takes no new call, and runs this one to its end.
    expect(started[0]?.replica.exited).toBe(false);
    expect(await call()).toBe("new");
    busy.end();
    await expect(busy.done).resolves.toBe("old");
    await settle();
    expect(started[0]?.replica.exited).toBe(true);
    expect(await call()).toBe("new");
  });

  it("keeps min_replicas warm with the new value", async () => {
    const { pool, target, started, change } = setUp({ min_replicas: 2 });
    pool.deployed(target);
    await settle();
    expect(started.map((s) => s.value)).toEqual(["old", "old"]);
    change("new");
    await settle();
    expect(started.filter((s) => !s.replica.exited).map((s) => s.value)).toEqual(["new", "new"]);
  });

  it("replaces a replica that read the values before the host's first news but was ready only after it", async () => {
    const { started, hold, call, change, readAfter } = setUp();
    let read: () => void = () => {};
    readAfter(
      new Promise<void>((resolve) => {
        read = resolve;
      }),
    );
    const early = hold(); // starts a replica, whose read of the secrets is under way
    await settle();
    change("new"); // heard while that read was answered with the old values
    readAfter(Promise.resolve());
    read();
    early.end();
    await expect(early.done).resolves.toBe("old"); // it came before the change
    await settle();
    expect(started[0]?.replica.exited).toBe(true);
    expect(await call()).toBe("new");
  });

  it("gives no call made after the change to a replica still starting, which may have read the values before", async () => {
    // Two calls a replica: the starting one has a free slot.
    const { pool, started, hold, call, change, project, readAfter } = setUp({
      replica_concurrency: 2,
    });
    pool.secretsChanged("p", project.revision); // the host heard of the project before
    let read: () => void = () => {};
    readAfter(
      new Promise<void>((resolve) => {
        read = resolve;
      }),
    );
    const early = hold(); // its replica's read of the secrets is under way
    await settle();
    change("new");
    readAfter(Promise.resolve());
    const late = call();
    read();
    expect(await late).toBe("new"); // before, it was given the starting replica: "old"
    expect(started).toHaveLength(2);
    early.end();
    await expect(early.done).resolves.toBe("old"); // it came before the change
    await settle();
    expect(started[0]?.replica.exited).toBe(true);
  });

  it("changes nothing when the revision is one heard before, or another project's", async () => {
    const { pool, started, call, project } = setUp();
    expect(await call()).toBe("old");
    pool.secretsChanged("p", project.revision); // heard as the replica read them
    pool.secretsChanged("p", project.revision - 1); // a late answer
    pool.secretsChanged("other", project.revision + 5);
    pool.secretsChanged("p", undefined); // an older control plane
    await settle();
    expect(await call()).toBe("old");
    expect(started).toHaveLength(1);
    expect(started[0]?.replica.exited).toBe(false);
  });
});
