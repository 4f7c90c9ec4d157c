/**
 * Property: bad input is always answered. Whatever a client sends to any route of the control
 * plane — random JSON or not JSON, path segments, query strings, methods, with a right, wrong or
 * no token — the answer is a 4xx with a JSON `{message}`, or, when the input happened to be
 * right, a 2xx the route documents; never a 5xx. Over a real libSQL file, with a runtime host
 * that takes every deploy (so that a right deploy is a 201, not a 502).
 *
 * Random seeds: a failure prints its seed and path (fast-check), to replay it with
 * `fc.assert(..., { seed, path })`.
 */
import type { Server } from "node:http";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawConnect } from "../test/raw-http.ts";
import { serveControlPlane } from "./listen.ts";
import type { Fixture } from "./testing/fixture.ts";
import { INTERNAL_TOKEN, noRuntimeHosts } from "./testing/fixture.ts";
import { libsqlFixture } from "./testing/libsql.ts";
import {
  anyRequest,
  type Known,
  type OpenApiDocument,
  type Operation,
  operationsOf,
  type RandomRequest,
  requestsTo,
} from "./testing/requests.arbitrary.ts";

/** Runs per route; the whole file stays within a few seconds on 2 cores. */
const RUNS_PER_ROUTE = 100;
const RUNS_ANY_PATH = 300;
const RUNS_OVER_SOCKET = 300;

let fx: Fixture & { cleanup(): Promise<void> };
let server: Server;
let base: string;
let operations: Operation[];
let known: Known;

const b64 = (text: string) => Buffer.from(text).toString("base64");

beforeAll(async () => {
  fx = await libsqlFixture({
    hosts: {
      start: noRuntimeHosts.start,
      announce: async () => {},
      remove: async () => {},
      runLogs: async () => undefined,
      replicas: async () => ({ starting: 0, idle: 1, busy: 0, queued: 0, byHost: new Map() }),
      secretsChanged: async () => {},
      output: async () => ({ replicas: [], unreachable: 0 }),
    },
  });
  const doc = (await (
    await fx.call("GET", "/v2/openapi.json", { token: null })
  ).json()) as OpenApiDocument;
  operations = operationsOf(doc, fx.app.routes);
  const port = await new Promise<number>((resolve) => {
    server = serveControlPlane(fx.app, { port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve(info.port),
    );
  });
  base = `http://127.0.0.1:${port}`;

  const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
  const account = async (name: string) => {
    const res = await fx.call("POST", `/v2/projects/${fx.projectId}/service-accounts`, {
      body: { name, expiresAt },
    });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; token: string };
  };
  const sa = await account("ci");
  const revoked = await account("gone");
  await fx.call("DELETE", `/v2/projects/${fx.projectId}/service-accounts/${revoked.id}`);
  const deployed = await fx.call("POST", `/v2/projects/${fx.projectId}/apps`, {
    body: {
      files: [
        { path: "runlet.toml", contentBase64: b64('name = "hello"\n') },
        { path: "main.mjs", contentBase64: b64("export const run = () => 1;") },
      ],
    },
  });
  expect(deployed.status).toBe(201);

  known = {
    owner: fx.owner.token,
    internal: INTERNAL_TOKEN,
    others: [
      fx.member.token,
      fx.outsider.token,
      sa.token,
      revoked.token,
      `${fx.owner.token.slice(0, -4)}AAAA`,
    ],
    params: {
      projectId: [fx.projectId, fx.outsiderProjectId, "prj_00000000000000000000000000"],
      saId: [sa.id, revoked.id, "sa_00000000000000000000000000"],
      name: ["DATABASE_URL", "_x"],
      appName: ["hello", "missing"],
      runId: ["run_00000000000000000000000000"],
    },
  };
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await fx?.cleanup();
});

/** The operation a request reaches, if any: HEAD is served by GET. */
function operationOf(req: RandomRequest, pathname: string): Operation | undefined {
  const method = req.method.toUpperCase() === "HEAD" ? "GET" : req.method.toUpperCase();
  return operations.find((op) => op.method === method && op.pattern.test(pathname));
}

/** The property itself, for one answer to `req`. */
function judge(req: RandomRequest, url: string, status: number, type: string | null, text: string) {
  const what = `${req.method} ${req.target} → ${status} ${text.slice(0, 300)}`;
  expect(status, what).toBeLessThan(500);
  if (/^\/$|^\/dashboard(\/|$)/.test(new URL(url).pathname)) {
    // The dashboard's pages: a person reads their refusals (HTML pages; JSON only for what
    // Node's parser refuses before any route), and forms redirect (303).
    if (status >= 400 && req.method.toUpperCase() !== "HEAD")
      expect(type, what).toMatch(/^(text\/html|application\/json)/);
    return;
  }
  if (status >= 400) {
    if (req.method.toUpperCase() === "HEAD") return;
    expect(type, what).toMatch(/^application\/json/);
    const parsed = JSON.parse(text) as { message?: unknown };
    expect(typeof parsed.message, what).toBe("string");
    return;
  }
  const op = operationOf(req, new URL(url).pathname);
  expect(op, what).toBeDefined();
  expect(op?.success, what).toContain(status);
}

/** In process, through `app.request`: the routes' own validation. */
async function answerIsSound(req: RandomRequest): Promise<void> {
  let request: Request;
  try {
    request = new Request(new URL(req.target, "http://127.0.0.1"), {
      method: req.method,
      headers: req.headers,
      body: req.body,
    });
  } catch {
    // Not a request a client can send (a method fetch forbids, say): nothing to answer.
    return;
  }
  const res = await fx.app.request(request);
  judge(req, request.url, res.status, res.headers.get("content-type"), await res.text());
}

/**
 * Over a socket, as written (no URL or method normalized by a client library), to the server
 * `server.ts` runs: Node's parser and @hono/node-server answer too. HEAD goes as GET: its answer
 * has a Content-Length and no body, which the bare client cannot tell.
 */
async function answerOverSocketIsSound(req: RandomRequest): Promise<void> {
  const method = req.method.toUpperCase() === "HEAD" ? "GET" : req.method;
  const body = Buffer.from(req.body ?? "");
  const head = [
    `${method} ${req.target} HTTP/1.1`,
    "host: 127.0.0.1",
    ...Object.entries(req.headers).map(([name, value]) => `${name}: ${value}`),
    `content-length: ${body.length}`,
    "connection: close",
  ];
  const conn = await rawConnect(base);
  await conn.write(Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`), body]));
  const answer = await conn.response();
  conn.socket.end();
  await conn.closed;
  expect(conn.errors).toEqual([]);
  const sent = { ...req, method };
  judge(
    sent,
    // A path target is the server's path as sent ("//" included, which `new URL(t, base)`
    // would read as a host); an absolute-form target is a URL of its own.
    req.target.startsWith("/") ? `${base}${req.target}` : new URL(req.target, base).href,
    answer.status,
    answer.headers["content-type"] ?? null,
    answer.body,
  );
}

describe("every route answers bad input with a 4xx {message}, never a 5xx", () => {
  it("lists the routes it covers", () => {
    expect(operations.length).toBeGreaterThanOrEqual(18);
  });

  it("for each route: random parameters, queries, bodies, methods and tokens", async () => {
    for (const op of operations) {
      await fc.assert(fc.asyncProperty(requestsTo(op, known), answerIsSound), {
        numRuns: RUNS_PER_ROUTE,
      });
    }
  });

  it("for any path at all", async () => {
    await fc.assert(fc.asyncProperty(anyRequest(known), answerIsSound), {
      numRuns: RUNS_ANY_PATH,
    });
  });

  it("over a socket to the Node server, for each route and any path", async () => {
    const requests = fc.oneof(anyRequest(known), ...operations.map((op) => requestsTo(op, known)));
    await fc.assert(fc.asyncProperty(requests, answerOverSocketIsSound), {
      numRuns: RUNS_OVER_SOCKET,
    });
  });
});
