/**
 * A wrong method on a management API route is 405 `method_not_allowed` with `Allow`, naming the
 * methods the path takes (until 2026-11-27 it was 404 "no such management API route", which read
 * as a wrong path); a path no route has stays 404.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Fixture } from "./testing/fixture.ts";
import { libsqlFixture } from "./testing/libsql.ts";

let fx: Fixture & { cleanup(): Promise<void> };

beforeAll(async () => {
  fx = await libsqlFixture();
});

afterAll(async () => {
  await fx?.cleanup();
});

describe("a management API path under a method it does not take", () => {
  it("is 405 with Allow, and the message names the methods it takes", async () => {
    const project = `/v2/projects/${fx.projectId}`;
    const cases: Array<[string, string, string]> = [
      ["PUT", `${project}/audit-log`, "GET, HEAD"],
      ["POST", `${project}/audit-log`, "GET, HEAD"],
      ["DELETE", `${project}/audit-log/export`, "GET, HEAD"],
      ["DELETE", `${project}/secrets`, "GET, HEAD"],
      ["POST", `${project}/secrets/DATABASE_URL`, "GET, HEAD, PUT, DELETE"],
      ["POST", project, "GET, HEAD, PATCH, DELETE"],
      ["DELETE", "/v2/projects", "GET, HEAD, POST"],
      ["GET", `${project}/apps/hello/versions/3/redeploy`, "POST"],
      ["PATCH", "/v2/hosts/tokens/hjt_x", "DELETE"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await fx.call(method, path, { body: method === "GET" ? undefined : {} });
      const named = allow.replace(", HEAD", "");
      expect([method, path, res.status, res.headers.get("allow"), await res.json()]).toEqual([
        method,
        path,
        405,
        allow,
        {
          message: `${method} is not allowed on ${path}; it takes ${named}`,
          code: "method_not_allowed",
        },
      ]);
    }
  });

  it("is 405 before any token is asked for, as a path of no route is 404 without one", async () => {
    const res = await fx.call("PUT", `/v2/projects/${fx.projectId}/audit-log`, { token: null });
    expect([res.status, res.headers.get("allow")]).toEqual([405, "GET, HEAD"]);
  });

  it("leaves a path no route has 404, a trailing slash included, as its router does", async () => {
    for (const [method, path] of [
      ["GET", "/v2/nowhere"],
      ["PUT", "/v2/projects/prj_x/audit-log/"],
      ["GET", "/v2/projects/prj_x/audit-log/"],
      ["DELETE", "/v2/projects/prj_x/secrets/a/b"],
    ] as const) {
      const res = await fx.call(method, path);
      expect([method, path, res.status, res.headers.get("allow"), await res.json()]).toEqual([
        method,
        path,
        404,
        null,
        { message: "no such management API route", code: "not_found" },
      ]);
    }
  });
});
