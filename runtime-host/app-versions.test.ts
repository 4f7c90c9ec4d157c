// An async run handed over with the id of the app it was accepted for (`X-Runlet-App-Id`): the
// host runs it on that app or not at all. Found on a `runlet start` stack: 10 runs queued for an
// app, the app deleted and another deployed under its name, and all 10 ran on the new app's
// code. On the real registry, with the control plane's answers given by the test.
import { readFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newId } from "../common/ids.ts";
import { HttpError } from "./http/errors.ts";
import { deploymentOf } from "./http/params.ts";
import type { ReplicaPool } from "./pool/pool.ts";
import { currentOfApp as currentOf, newHome, removeHome, versionsOfApp } from "./test-support.ts";

// Ids sort by time: the first app of the name, a run accepted for it, then the app deployed
// under the name after its delete, and a run made after that.
const T = Date.UTC(2026, 10, 26);
const FIRST = newId("app", T);
const EARLY_RUN = newId("run", T + 1_000);
const SECOND = newId("app", T + 2_000);
const LATE_RUN = newId("run", T + 3_000);

let home: string;
let pool: ReplicaPool;

beforeEach(async () => {
  home = await newHome();
});

afterEach(async () => {
  await pool.close();
  await removeHome(home);
});

/** A host joined to a control plane whose app 'a' is `now.current`, with files saying so. */
async function setUp() {
  const made = await versionsOfApp(home, FIRST);
  pool = made.pool;
  const { versions, now } = made;
  const handOver = (appId: string, runId = EARLY_RUN) =>
    deploymentOf(versions, { project: "p", app: "a" }, "managed", "not managed", { appId, runId });
  return { versions, now, currentOf, handOver };
}

describe("a run handed over with the app it was accepted for", () => {
  it("is refused (404) once that app was deleted and another deployed under its name", async () => {
    const { versions, now, currentOf, handOver } = await setUp();
    await expect(handOver(FIRST)).resolves.toMatchObject({ version: 1 });
    // The delete reaches the host, then the second app's deploy.
    await versions.remove("p", "a");
    now.current = await currentOf(SECOND);
    versions.setCurrent("p", "a", now.current);
    const refused = await handOver(FIRST).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(HttpError);
    expect(refused).toMatchObject({
      status: 404,
      message:
        "app 'a' was deleted after the run was accepted: the app deployed since under its name does not run it",
    });
    // A run of the second app runs.
    await expect(handOver(SECOND, LATE_RUN)).resolves.toMatchObject({ version: 1 });
  });

  it("is refused (404) saying its app was deleted, once deleted with none deployed since", async () => {
    const { versions, now, handOver } = await setUp();
    await expect(handOver(FIRST)).resolves.toMatchObject({ version: 1 });
    await versions.remove("p", "a");
    (now as { current: unknown }).current = undefined;
    const refused = await handOver(FIRST).catch((err: unknown) => err);
    expect(refused).toMatchObject({
      status: 404,
      message: "app 'a' was deleted after the run was accepted in project 'p'",
    });
    // A call that brings no app id (a sync call) is told the app is not deployed.
    const plain = deploymentOf(versions, { project: "p", app: "a" }, "managed", "not managed");
    await expect(plain).rejects.toMatchObject({
      status: 404,
      message: "app 'a' is not deployed in project 'p'",
    });
  });

  it("runs a run made after the later app, though it brings the deleted app's id (the Worker's app cache)", async () => {
    const { versions, now, currentOf, handOver } = await setUp();
    await expect(handOver(FIRST)).resolves.toMatchObject({ version: 1 });
    await versions.remove("p", "a");
    now.current = await currentOf(SECOND);
    versions.setCurrent("p", "a", now.current);
    const deployment = await handOver(FIRST, LATE_RUN);
    expect(await readFile(`${deployment.dir}/main.mjs`, "utf8")).toContain(SECOND);
  });

  it("of a later app than the host heard of: the host asks again and runs it on that app", async () => {
    const { now, currentOf, handOver } = await setUp();
    await expect(handOver(FIRST)).resolves.toMatchObject({ version: 1 });
    // Deleted and deployed again; this host missed both (it was cut off).
    now.current = await currentOf(SECOND);
    const deployment = await handOver(SECOND, LATE_RUN);
    expect(await readFile(`${deployment.dir}/main.mjs`, "utf8")).toContain(SECOND);
  });
});
