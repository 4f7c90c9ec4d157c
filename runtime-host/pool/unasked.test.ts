// A host that cannot ask its control plane for a replica's grant (its link stalled, or the
// control plane failing): a call of an app with no replica here is refused, as nothing can be
// started, and the refusal says why. Before, it said "the app is at capacity (… all busy) on
// other hosts: … raise [scaling] max_replicas": on a lone host, with nothing busy anywhere.
// On in-memory replicas.
import { afterEach, expect, it } from "vitest";
import { ReplicaGrants } from "./grants.ts";
import { ReplicaPool } from "./pool.ts";
import { FakeReplica, fakeTarget } from "./test-support.ts";
import { WorkloadError } from "./workload.ts";

let pool: ReplicaPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

const target = fakeTarget({ max_replicas: 4 });

it("refuses a call it cannot start a replica for, saying the control plane could not be asked", async () => {
  const grants = new ReplicaGrants(async () => {
    throw new Error("The operation timed out.");
  });
  pool = new ReplicaPool((t) => new FakeReplica(t), { queueWaitMs: 5_000, maxWaiting: 10, grants });
  const refused = await pool
    .use(target, async () => {})
    .then(
      () => undefined,
      (err: unknown) => err,
    );
  expect(refused).toBeInstanceOf(WorkloadError);
  const { failure, message } = refused as WorkloadError;
  // Still one another host may take (nothing ran), and as transient as a busy app (429).
  expect(failure).toMatchObject({ kind: "busy", elsewhere: true });
  expect(message).toBe(
    "no replica of the app could be started here: the control plane, which grants replicas over all hosts, could not be asked (The operation timed out.); try again shortly",
  );
  expect(message).not.toMatch(/capacity|max_replicas/);
});

it("says the control plane's answer when it answered, but not with a grant", async () => {
  const grants = new ReplicaGrants(async () => ({
    granted: false,
    elsewhere: true,
    unasked: "it answered 503",
  }));
  pool = new ReplicaPool((t) => new FakeReplica(t), { queueWaitMs: 5_000, maxWaiting: 10, grants });
  const refused = await pool.use(target, async () => {}).catch((err: unknown) => err);
  expect((refused as WorkloadError).message).toMatch(/could not be asked \(it answered 503\)/);
});
