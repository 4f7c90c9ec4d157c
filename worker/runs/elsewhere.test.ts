/**
 * A host that cannot start a replica for a reason of its own (its sandbox, the project's
 * secrets, the version's files) answers a hand-over 502 with `elsewhere: true`: nothing ran.
 * The run stays queued for another host, as a sync call goes to the next one; with no other
 * host it fails with the host's reason. Before, it failed at once while another host could
 * have run it.
 */
import { fetchMock } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rendezvousOrder } from "../../common/rendezvous.ts";
import { forgetPlacement } from "../placement.ts";
import {
  accept,
  CONTROL,
  fakeHost,
  HOST,
  newApp,
  newRun,
  PROJECT,
  rowOf,
  startFakes,
  statusIs,
  viewOf,
} from "./test-support.ts";

const FAR = "http://far-host.test";
const REASON =
  "the runtime host could not start a replica of the app: cannot read the project's secrets: the control plane answered 502 for the project's secrets";
const cannot = () => ({
  status: 502,
  body: { message: REASON, code: "load_failed", elsewhere: true },
});

beforeAll(startFakes);
afterAll(() => forgetPlacement());

describe("a hand-over answered 502 elsewhere", () => {
  it("fails the run with the host's reason when no other host is up, after one try", async () => {
    forgetPlacement();
    const app = newApp();
    const host = fakeHost(app, cannot);
    const run = newRun(app);
    await accept(run);
    await statusIs(run, "failure");
    expect(await viewOf(run)).toMatchObject({ error: { message: REASON }, started_at: null });
    expect(host.count(run)).toBe(1);
  });

  it("hands the run to another host, where it runs; the first is not asked again", async () => {
    forgetPlacement();
    const hosts = [
      { id: "hst_near", address: HOST, state: "up", slots: 8, busy: 0, queued: 0, apps: [] },
      { id: "hst_far", address: FAR, state: "up", slots: 8, busy: 0, queued: 0, apps: [] },
    ];
    fetchMock.get(CONTROL).intercept({ path: "/internal/hosts" }).reply(200, { hosts }).persist();
    // An app whose order puts the host that cannot start it first.
    let app = newApp();
    for (
      let i = 0;
      i < 100 && rendezvousOrder(`${PROJECT}/${app}`, hosts)[0]?.id !== "hst_near";
      i++
    )
      app = newApp();
    const near = fakeHost(app, cannot);
    const far = fakeHost(app, undefined, FAR);
    const run = newRun(app);
    await accept(run);
    await statusIs(run, "running");
    expect([near.count(run), far.count(run)]).toEqual([1, 1]);
    expect(await rowOf(run)).toMatchObject({ host_id: "hst_far", host_url: FAR });
  });
});
