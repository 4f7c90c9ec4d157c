// The Worker's word that it could not connect to a host (docs/hosts.md, "Placement"): the
// registry lists the host unreachable, with when and the error, to the Worker's placement and to
// the operator, for a minute or until the host registers again. Until 2026-11-27 such a host
// stayed `up` and nothing said why about one call in fifty to its apps failed 502.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostView } from "../../common/host-view.ts";
import { UNREACHABLE_MS } from "../../common/protocol/hosts.ts";
import { hosts } from "../db/schema.ts";
import { INTERNAL_TOKEN, operatorHostToken } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let hostToken: string;
const ADDRESS = "http://10.6.0.1:8790";
const ERROR = "the Worker could not connect to http://10.6.0.1:8790 (Network connection lost.)";

beforeAll(async () => {
  f = await libsqlFixture();
  ({ token: hostToken } = await operatorHostToken(f, "racks"));
});
afterAll(() => f.cleanup());

const register = async () => {
  const res = await f.call("POST", "/internal/hosts", {
    token: hostToken,
    body: { name: "far", address: ADDRESS, slots: 4, memoryMb: 1024 },
  });
  return ((await res.json()) as { hostId: string }).hostId;
};
const report = (id: string, body: unknown, token: string | null = INTERNAL_TOKEN) =>
  f.call("POST", `/internal/hosts/${id}/unreachable`, { token, body });
const placed = async (id: string) => {
  const res = await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN });
  const { hosts: all } = (await res.json()) as { hosts: Array<Record<string, unknown>> };
  return all.find((h) => h.id === id);
};
const listed = async (id: string) => {
  const { hosts: all } = (await (await f.call("GET", "/v2/hosts")).json()) as {
    hosts: Array<Record<string, unknown>>;
  };
  return all.find((h) => h.id === id);
};

describe("a host the Worker could not connect to", () => {
  it("is listed unreachable, with when and why, to the Worker and to the operator", async () => {
    const id = await register();
    const before = Date.now();
    expect((await report(id, { error: ERROR })).status).toBe(204);
    const forWorker = await placed(id);
    expect(forWorker).toMatchObject({ state: "up", unreachable: { error: ERROR } });
    expect((forWorker?.unreachable as { at: number } | undefined)?.at).toBeGreaterThanOrEqual(
      before,
    );
    const forOperator = await listed(id);
    expect(forOperator).toMatchObject({ state: "up", unreachable: { error: ERROR } });
    const at = (forOperator?.unreachable as { at: string } | undefined)?.at ?? "";
    expect(Date.parse(at)).toBeGreaterThanOrEqual(before);
    // `runlet hosts` and the dashboard's hosts page say it in the state's column.
    const view = hostView(forOperator as never, Date.parse(at) + 12_000);
    expect(view.state).toBe(`up, unreachable 12 s ago: ${ERROR}`);
  });

  it("is listed so for a minute only, and not once it registers again", async () => {
    const id = await register();
    await report(id, { error: ERROR });
    await f.db
      .update(hosts)
      .set({ unreachableAt: Date.now() - UNREACHABLE_MS - 1 })
      .where(eq(hosts.id, id));
    expect(await placed(id)).not.toHaveProperty("unreachable");
    await report(id, { error: ERROR });
    expect(await placed(id)).toHaveProperty("unreachable");
    expect(await register()).toBe(id); // restarted, perhaps at a corrected address
    expect(await placed(id)).not.toHaveProperty("unreachable");
    expect(await listed(id)).not.toHaveProperty("unreachable");
  });

  it("is not marked by a check begun before the host registered again (restarted at once)", async () => {
    const id = await register();
    const checkedAt = Date.now() - 1_000; // the Worker's check, while the old process was gone
    expect((await report(id, { error: ERROR, checkedAt })).status).toBe(204);
    expect(await placed(id)).not.toHaveProperty("unreachable");
    expect((await report(id, { error: ERROR, checkedAt: Date.now() })).status).toBe(204);
    expect(await placed(id)).toHaveProperty("unreachable");
  });

  it("is said only by the Worker (the internal token), of a host the registry has, with an error", async () => {
    const id = await register();
    expect((await report(id, { error: ERROR }, hostToken)).status).toBe(401);
    expect((await report(id, { error: ERROR }, null)).status).toBe(401);
    const bad = await report(id, { error: "" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toHaveProperty("message");
    expect((await report(id, { error: ERROR, extra: 1 })).status).toBe(400);
    const unknown = await report("hst_nope", { error: ERROR });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ message: "no host 'hst_nope' in the registry" });
    expect(await placed(id)).not.toHaveProperty("unreachable");
  });
});
