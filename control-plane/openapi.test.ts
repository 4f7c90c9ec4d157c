import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { libsqlFixture } from "./testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
});

afterAll(() => f?.cleanup());

type Operation = {
  operationId?: string;
  responses: Record<string, unknown>;
  parameters?: { name: string; in: string }[];
};
type Document = {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
};

describe("GET /v2/openapi.json", () => {
  let doc: Document;
  beforeAll(async () => {
    const res = await f.call("GET", "/v2/openapi.json", { token: null });
    expect(res.status).toBe(200);
    doc = (await res.json()) as Document;
  });

  it("is OpenAPI 3.1 for version 1.0.0 of the management API", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("1.0.0");
  });

  it("describes exactly the /v2 routes the app serves", () => {
    const served = new Set(
      f.app.routes
        .filter((r) => r.path.startsWith("/v2/") && r.path !== "/v2/*" && r.method !== "ALL")
        .filter((r) => r.path !== "/v2/openapi.json")
        .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`),
    );
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
      ),
    );
    expect([...documented].sort()).toEqual([...served].sort());
    expect(documented.size).toBeGreaterThanOrEqual(10);
  });

  it("gives every operation an id and its 401", () => {
    const ids = new Set<string>();
    for (const ops of Object.values(doc.paths)) {
      for (const op of Object.values(ops)) {
        expect(op.operationId).toBeTruthy();
        ids.add(op.operationId as string);
        expect(Object.keys(op.responses)).toContain("401");
      }
    }
    expect(ids.size).toBe(Object.values(doc.paths).flatMap((ops) => Object.values(ops)).length);
  });

  it("documents listAuditLogs with the query parameters of the specification", () => {
    const op = doc.paths["/v2/projects/{projectId}/audit-log"]?.get;
    expect(op?.operationId).toBe("listAuditLogs");
    const query = (op?.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
    expect(query.sort()).toEqual([
      "action",
      "actor",
      "from",
      "limit",
      "nextToken",
      "outcome",
      "to",
    ]);
    expect(Object.keys(op?.responses ?? {})).toEqual(expect.arrayContaining(["200", "400", "401"]));
  });
  it("documents `limit` and `nextToken` on every list that pages on request", () => {
    const project = "/v2/projects/{projectId}";
    for (const path of [
      "apps",
      "apps/{appName}/versions",
      "service-accounts",
      "users",
      "secrets",
    ]) {
      const op = doc.paths[`${project}/${path}`]?.get;
      const query = (op?.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
      expect(query.sort(), path).toEqual(["limit", "nextToken"]);
    }
  });
  it("documents a project's users and their tokens, with the last owner's 409", () => {
    const users = "/v2/projects/{projectId}/users";
    const ops = {
      listProjectUsers: doc.paths[users]?.get,
      addProjectUser: doc.paths[`${users}/{userId}`]?.put,
      setProjectUserRole: doc.paths[`${users}/{userId}`]?.patch,
      removeProjectUser: doc.paths[`${users}/{userId}`]?.delete,
      issueUserToken: doc.paths[`${users}/{userId}/token`]?.post,
      revokeUserToken: doc.paths[`${users}/{userId}/token`]?.delete,
      renewOwnToken: doc.paths["/v2/me/token"]?.post,
    };
    for (const [id, op] of Object.entries(ops)) expect(op?.operationId).toBe(id);
    for (const op of [ops.addProjectUser, ops.setProjectUserRole, ops.removeProjectUser]) {
      expect(Object.keys(op?.responses ?? {})).toContain("409");
    }
  });
});
