// Two live hosts may not share a name (docs/hosts.md, "Registration and heartbeats"): until
// 2026-11-27 a second host took a name a live one had without a word, and `runlet hosts drain
// NAME` listed both. A host back at its own address keeps its name and id; one down, stopped or
// left frees the name.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOWN_AFTER_MS } from "../../common/protocol/hosts.ts";
import { hosts } from "../db/schema.ts";
import { operatorHostToken } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let token: string;

beforeAll(async () => {
  f = await libsqlFixture();
  ({ token } = await operatorHostToken(f, "racks"));
});
afterAll(() => f.cleanup());

async function register(name: string, address: string, as = token) {
  const res = await f.call("POST", "/internal/hosts", {
    token: as,
    body: { name, address, slots: 4, memoryMb: 4096 },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const silence = (id: unknown) =>
  f.db
    .update(hosts)
    .set({ seenAt: Date.now() - DOWN_AFTER_MS - 1_000 })
    .where(eq(hosts.id, id as string));

describe("a host's name", () => {
  it("is refused (409) while a live host at another address has it, naming that host and what to do", async () => {
    const first = await register("rack-1", "http://10.7.0.1:8790");
    expect(first.status).toBe(200);
    const second = await register("rack-1", "http://10.7.0.2:8790");
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: "conflict", held: "name" });
    expect(second.body.message).toBe(
      `the name 'rack-1' is runtime host ${first.body.hostId}'s, at http://10.7.0.1:8790, up, heard from 0 s ago. Give this host another name (runlet host --name NAME), or stop the other first (Ctrl-C on its runlet host, or revoke its token with runlet hosts revoke). If it is this host before a restart at another address, its entry is down in 15 s unless it is heard from again, and runlet host tries again until then and takes the name over`,
    );
    // Nothing written: the registry lists one rack-1.
    const listed = (await (await f.call("GET", "/v2/hosts")).json()) as {
      hosts: Array<{ name: string }>;
    };
    expect(listed.hosts.filter((h) => h.name === "rack-1")).toHaveLength(1);
    // Another name is taken at once.
    expect((await register("rack-2", "http://10.7.0.2:8790")).status).toBe(200);
  });

  it("is kept by a host that registers again at its own address, under its id", async () => {
    const first = await register("rack-3", "http://10.7.0.3:8790");
    const again = await register("rack-3", "http://10.7.0.3:8790");
    expect(again).toMatchObject({ status: 200, body: { hostId: first.body.hostId } });
  });

  it("is refused while the other is drained by an operator, or draining", async () => {
    const first = await register("rack-4", "http://10.7.0.4:8790");
    expect((await f.call("POST", `/v2/hosts/${first.body.hostId}/drain`)).status).toBe(204);
    const second = await register("rack-4", "http://10.7.0.5:8790");
    expect(second.status).toBe(409);
    expect(second.body.message).toContain(
      `${first.body.hostId}'s, at http://10.7.0.4:8790, drained`,
    );
  });

  it("is free once the other is down, or has left", async () => {
    const down = await register("rack-6", "http://10.7.0.6:8790");
    await silence(down.body.hostId);
    expect((await register("rack-6", "http://10.7.0.7:8790")).status).toBe(200);

    const left = await register("rack-8", "http://10.7.0.8:8790");
    const leave = await f.call("POST", `/internal/hosts/${left.body.hostId}/leave`, {
      token,
      body: {},
    });
    expect(leave.status).toBe(204);
    expect((await register("rack-8", "http://10.7.0.9:8790")).status).toBe(200);
  });
});
