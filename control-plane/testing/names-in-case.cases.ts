/**
 * Names that differ only in case are one name to the checks that keep a live name unique — a
 * project's service accounts (`ci` and `CI`) and the host tokens (`a` and `A`) — on libSQL and
 * on D1: the second is 409 naming the first, as for the same name; letters outside ASCII are
 * compared as written (docs/api.md).
 */
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../db/index.ts";
import { users } from "../db/schema.ts";
import { createFixture, type Fixture } from "./fixture.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field.
type Json = Record<string, any>;

export function namesInCaseCases(open: () => Promise<Database>) {
  let f: Fixture;
  const expiresAt = () => new Date(Date.now() + 5 * 86_400_000).toISOString();
  const post = async (path: string, body: Json) => {
    const res = await f.call("POST", path, { body });
    return { status: res.status, body: (await res.json()) as Json };
  };

  beforeAll(async () => {
    f = await createFixture(await open());
    await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  });

  describe("service accounts", () => {
    const path = () => `/v2/projects/${f.projectId}/service-accounts`;
    const account = (name: string) => post(path(), { name, expiresAt: expiresAt() });

    it("refuses a live account's name in another case with 409 naming it; revoking it frees the name", async () => {
      const first = await account("ci");
      expect(first.status).toBe(201);
      for (const name of ["CI", "Ci"]) {
        expect(await account(name)).toEqual({
          status: 409,
          body: {
            code: "conflict",
            message: `a service account named 'ci' is active in this project already (${first.body.id}): revoke it first (runlet tokens revoke ${first.body.id}, or the dashboard's API keys page), or pick another name`,
          },
        });
      }
      expect((await f.call("DELETE", `${path()}/${first.body.id}`)).status).toBe(204);
      expect((await account("CI")).status).toBe(201);
    });

    it("makes one of two creates at once of names that differ in case", async () => {
      const both = await Promise.all([account("Deploy-Bot"), account("deploy-bot")]);
      expect(both.map((a) => a.status).sort()).toEqual([201, 409]);
    });

    it("compares letters outside ASCII as written: É and é are two names, the rest folded", async () => {
      const first = await account("Émile");
      expect(first.status).toBe(201);
      expect((await account("émile")).status).toBe(201);
      const again = await account("ÉMILE");
      expect(again.status).toBe(409);
      expect(again.body.message).toContain(`named 'Émile' is active`);
      expect(again.body.message).toContain(first.body.id);
    });
  });

  describe("host tokens", () => {
    const token = (name: string) => post("/v2/hosts/tokens", { name });

    it("refuses a live token's name in another case with 409 naming it; revoking it frees the name", async () => {
      const first = await token("case-a");
      expect(first.status).toBe(201);
      expect(await token("CASE-A")).toEqual({
        status: 409,
        body: {
          code: "conflict",
          message: `a host token named 'case-a' is live already (${first.body.id}): revoke it first (runlet hosts revoke ${first.body.id}, or the dashboard's Join tokens tab, under Hosts), or pick another name`,
        },
      });
      expect((await f.call("DELETE", `/v2/hosts/tokens/${first.body.id}`)).status).toBe(204);
      expect((await token("Case-A")).status).toBe(201);
      const both = await Promise.all([token("Rack-B"), token("rack-b")]);
      expect(both.map((a) => a.status).sort()).toEqual([201, 409]);
    });
  });
}
