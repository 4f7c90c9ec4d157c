// GET /v4/openapi.json against the routes the Worker serves (worker/index.ts's `app.routes`), as
// control-plane/openapi.test.ts does for the management API: every served /v4 route is
// documented and nothing else, every operation has an id and a 401, and the document holds
// together (each $ref resolves, each path template has its parameters, no two paths are one).
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "./index.ts";
import { caller } from "./middleware/caller.ts";
import { noWebSocket } from "./middleware/no-websocket.ts";
import { runId } from "./middleware/run-id.ts";
import { OPENAPI_PATH, openApiDocument } from "./openapi.ts";

type Parameter = { name: string; in: string; $ref?: string };
type Operation = {
  operationId?: string;
  responses: Record<string, unknown>;
  parameters?: Parameter[];
};
type PathItem = Record<string, Operation> & { parameters?: Parameter[] };
type Document = {
  openapi: string;
  info: { version: string };
  paths: Record<string, PathItem>;
  components: Record<string, Record<string, unknown>>;
};

/** The methods a route on every method (`app.all`) stands for in the document. */
const ANY_METHOD = ["get", "put", "post", "patch", "delete", "head", "options"];
/** Hono's parameter names, as the document spells them. */
const NAMES: Record<string, string> = { fn: "function", runId: "run_id" };
const MIDDLEWARE: unknown[] = [runId, noWebSocket, caller];

/** `/v4/:project/:app/runs/:runId{run_…{26}}` → `/v4/{project}/{app}/runs/{run_id}`; `*` → a segment. */
function documentedPath(honoPath: string): string {
  return honoPath
    .replace(/:(\w+)(\{(?:[^{}]|\{[^{}]*\})*\})?/g, (_, name: string) => `{${NAMES[name] ?? name}}`)
    .replace(/\/\*$/, "/{function}");
}

const doc = JSON.parse(JSON.stringify(openApiDocument)) as Document;
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([key]) => key !== "parameters")
    .map(([method, op]) => ({ path, method, op: op as Operation, item })),
);

/** The object a local `$ref` names, or undefined. */
function resolve(ref: string): unknown {
  return ref
    .replace(/^#\//, "")
    .split("/")
    .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], doc);
}

describe("GET /v4/openapi.json", () => {
  it("answers the document without a token, before the run routes' middleware", async () => {
    const res = await SELF.fetch(`https://worker.test${OPENAPI_PATH}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("x-request-id")).toBeNull();
    expect(await res.json()).toEqual({
      ...doc,
      servers: [{ url: "https://worker.test", description: "This Worker." }],
    });
  });

  it("is OpenAPI 3.1 for version 1.0.0 of the run API", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("1.0.0");
  });

  it("describes exactly the /v4 routes the Worker serves", () => {
    const routes = app.routes.filter(
      (r) =>
        r.path.startsWith("/v4/") && r.path !== OPENAPI_PATH && !MIDDLEWARE.includes(r.handler),
    );
    const served = new Set(
      routes.flatMap((r) =>
        (r.method === "ALL" ? ANY_METHOD : [r.method.toLowerCase()]).map(
          (method) => `${method} ${documentedPath(r.path)}`,
        ),
      ),
    );
    const documented = new Set(operations.map(({ method, path }) => `${method} ${path}`));
    expect([...documented].sort()).toEqual([...served].sort());
    expect(documented).toContain("post /v4/{project}/{app}/{function}");
    expect(documented).toContain("post /v4/{project}/{app}/runs/{run_id}/deliveries");
  });

  it("gives every operation a unique id, its 401 and the bearer scheme", () => {
    const ids = operations.map(({ op }) => op.operationId);
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z]+$/);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { op } of operations) {
      expect(Object.keys(op.responses)).toContain("401");
      expect((op as { security?: unknown }).security).toEqual([{ bearerAuth: [] }]);
    }
    expect(doc.components.securitySchemes?.bearerAuth).toMatchObject({ scheme: "bearer" });
  });

  it("holds together: each $ref resolves, each template has its path parameter, no two paths are one", () => {
    const refs: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === "object")
        for (const [key, value] of Object.entries(node)) {
          if (key === "$ref") refs.push(value as string);
          else walk(value);
        }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(20);
    expect(refs.filter((r) => resolve(r) === undefined)).toEqual([]);

    for (const { path, method, op, item } of operations) {
      const declared = [...(item.parameters ?? []), ...(op.parameters ?? [])]
        .map((p) => (p.$ref ? (resolve(p.$ref) as Parameter) : p))
        .filter((p) => p.in === "path")
        .map((p) => p.name)
        .sort();
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      expect(declared, `${method} ${path}`).toEqual(templated);
    }
    const shapes = Object.keys(doc.paths).map((p) => p.replace(/\{\w+\}/g, "{}"));
    expect(new Set(shapes).size).toBe(shapes.length);
  });
});
