// Deploys that come one after another while calls are under way: the host's registry (real
// folders) and pool, on replicas whose start the test holds and which then copy their version's
// files as a real replica does. Found on a `runlet start` stack redeployed 10 times in a row
// under sync and async calls: runs failed "the app failed to start: ENOENT: no such file or
// directory, lstat '…/host/apps/…/v7'".
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AppRegistry, type Deployment } from "../apps.ts";
import { bundle, configOf, newHome, removeHome } from "../test-support.ts";
import { ReplicaPool } from "./pool.ts";
import { FakeReplica } from "./test-support.ts";
import { copyVersion, type WorkloadSpec } from "./workload.ts";

/** A replica whose start waits for `go()`, then copies its version's files into a slot. */
class HeldReplica extends FakeReplica {
  readonly go: () => void;
  constructor(spec: WorkloadSpec, slot: string) {
    let go = () => {};
    const held = new Promise<void>((resolve) => {
      go = resolve;
    });
    super(spec, async () => {
      await held;
      await copyVersion(spec.dir, slot);
    });
    this.go = go;
  }
}

let home: string;
let pool: ReplicaPool | undefined;

beforeEach(async () => {
  home = await newHome();
});

afterEach(async () => {
  await pool?.close();
  pool = undefined;
  await removeHome(home);
});

async function setUp() {
  const registry = await AppRegistry.open(home);
  const started: HeldReplica[] = [];
  const slots = await mkdtemp(join(home, "slots-"));
  const p = new ReplicaPool(
    (target) => {
      const replica = new HeldReplica(target, join(slots, String(started.length)));
      started.push(replica);
      return replica;
    },
    { queueWaitMs: 5_000, maxWaiting: 100 },
  );
  pool = p;
  registry.keepWhileStarting((project, app) => p.startingFrom(project, app));
  /** Deploys `version` (`code`: its files' mark); `toPool: false` stops before the pool hears. */
  const deploy = async (version: number, { code = "", toPool = true } = {}) => {
    const deployment = await registry.deploy({
      project: "p",
      app: "a",
      version,
      config: configOf("a", { scaling: { max_replicas: 4, replica_concurrency: 1 } }),
      files: bundle({ "main.mjs": `export const run = () => "${code}${version}";` }),
    });
    if (toPool) p.deployed(deployment);
    return deployment;
  };
  /** A call of `deployment`: the version its replica runs, once it has one. */
  const call = (deployment: Deployment) =>
    p.use(deployment, async (workload) => workload.spec.version);
  return { pool: p, started, deploy, call };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("deploys while a replica is starting", () => {
  it("keeps the folder a replica still starts from through two later deploys", async () => {
    const { started, deploy, call } = await setUp();
    const v1 = await deploy(1);
    const first = call(v1);
    await settle();
    expect(started).toHaveLength(1);
    await deploy(2);
    await deploy(3); // before, this removed v1, whose replica had not copied it yet
    started[0]?.go();
    await expect(first).resolves.toBe(1);
  });

  it("runs a call that brings an older version on the current one, and keeps the current replicas", async () => {
    const { started, deploy, call } = await setUp();
    const v1 = await deploy(1);
    await deploy(2);
    const onV2 = call(await deploy(2));
    await settle();
    started[0]?.go();
    await expect(onV2).resolves.toBe(2);
    // A call that looked v1 up before v2 reached the pool: before, it switched the pool back to
    // v1 (retiring v2's replica) and started a replica from v1's folder.
    const late = call(v1);
    await settle();
    for (const replica of started) replica.go();
    await expect(late).resolves.toBe(2);
    expect(started).toHaveLength(1);
    expect(started[0]?.accepting).toBe(true);
  });

  it("runs a call of an app deleted and deployed again (versions from 1 again) on the new app", async () => {
    const { started, deploy, call } = await setUp();
    // The host missed the delete (its heartbeat came after the new deploy): the pool still runs
    // the deleted app's v3. By number, v1 of the new app looked older than it.
    const deleted = await deploy(3, { code: "old-" });
    const old = call(deleted);
    await settle();
    started[0]?.go();
    await expect(old).resolves.toBe(3);
    await settle(); // a later millisecond: the registry dates each deploy
    // A call that found the new app in the registry before its deploy reached the pool.
    const again = await deploy(1, { code: "new-", toPool: false });
    const early = call(again);
    await settle();
    for (const replica of started) replica.go();
    await expect(early).resolves.toBe(1);
    expect(started[1]?.spec.dir).toBe(again.dir);
    // And a call that looked up the deleted app before: it does not switch the pool back.
    const stale = call(deleted);
    await settle();
    for (const replica of started) replica.go();
    await expect(stale).resolves.toBe(1);
    expect(started).toHaveLength(2);
  });
});
