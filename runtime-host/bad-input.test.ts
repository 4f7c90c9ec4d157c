/**
 * Refused bodies over a real socket: the runtime host answers every refused or oversized body
 * with its 4xx `{message}`, and its client (the Worker) never sees a reset; a connection kept
 * alive serves the next request.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HEADER } from "../common/consts.ts";
import { chunk, rawConnect, requestHead, sendOnThenClose } from "../test/raw-http.ts";
import { MAX_INVOKE_BODY_BYTES } from "./limits.ts";
import type { RunningHost } from "./server.ts";
import { newHome, removeHome, startTestHost, TOKEN } from "./test-support.ts";

const KiB = 1024;
const MiB = 1024 * KiB;
const auth = { authorization: `Bearer ${TOKEN}` };

let home: string;
let host: RunningHost;

beforeAll(async () => {
  home = await newHome();
  host = await startTestHost(home, { limits: { spares: 0 } });
});

afterAll(async () => {
  await host.close();
  await removeHome(home);
});

describe("a keep-alive client (fetch) whose body is refused", () => {
  const body = JSON.stringify({ pad: "x".repeat(300 * KiB) });
  const cases = [
    { name: "without a token (401)", status: 401, headers: {}, path: "/internal/apps/p/a" },
    { name: "on no route (404)", status: 404, headers: auth, path: "/nowhere" },
    { name: "that is not a deploy (400)", status: 400, headers: auth, path: "/internal/apps/p/a" },
  ];

  for (const { name, status, headers, path } of cases) {
    it(`${name}: gets its answer and then the next one, 20 times`, async () => {
      for (let i = 0; i < 20; i++) {
        const refused = await fetch(`${host.url}${path}`, { method: "PUT", headers, body });
        expect(refused.status).toBe(status);
        expect(await refused.json()).toMatchObject({ message: expect.any(String) });
        const next = await fetch(`${host.url}/healthz`);
        expect(next.status).toBe(200);
        await next.body?.cancel();
      }
    });
  }
});

describe("one connection whose body is refused", () => {
  it("without a token, is answered 401 while the body comes, and serves the next request", async () => {
    const body = Buffer.alloc(300 * KiB, "x");
    const conn = await rawConnect(host.url);
    await conn.write(requestHead("PUT", "/internal/apps/p/a", body.length));
    await conn.write(body.subarray(0, 16 * KiB));
    expect((await conn.response()).status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await conn.write(body.subarray(16 * KiB))).toBe(true);
    await conn.write("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
    expect((await conn.response()).status).toBe(200);
    expect(conn.errors).toEqual([]);
    conn.socket.end();
    await conn.closed;
  });

  it("declared larger than a route takes is answered 413 with Connection: close, without a reset", async () => {
    const conn = await rawConnect(host.url);
    await conn.write(requestHead("PUT", "/internal/apps/p/a", 40 * MiB, auth));
    await conn.write(Buffer.alloc(64 * KiB, "x"));
    const refused = await conn.response();
    expect(refused.status).toBe(413);
    expect(refused.headers.connection).toBe("close");
    expect(JSON.parse(refused.body)).toMatchObject({ message: expect.any(String) });
    await sendOnThenClose(conn, 8 * MiB);
    expect(conn.errors).toEqual([]);
  });

  it("of unknown length (chunked) past the limit is answered 413, without a reset", async () => {
    const conn = await rawConnect(host.url);
    const headers = { ...auth, [HEADER.runId]: "run_big" };
    await conn.write(requestHead("POST", "/internal/invoke/p/a/run", null, headers));
    const part = Buffer.alloc(256 * KiB, "x");
    // The limit is found while reading: the answer comes once it is passed, and the client
    // goes on sending for a while (2 MiB) before it notices.
    let answered = false;
    const answer = conn.response(10_000).finally(() => {
      answered = true;
    });
    for (let sent = 0; !answered && sent < 4 * MAX_INVOKE_BODY_BYTES; sent += part.length) {
      await conn.write(chunk(part));
    }
    for (let sent = 0; sent < 2 * MiB; sent += part.length) await conn.write(chunk(part));
    await conn.write("0\r\n\r\n");
    const refused = await answer;
    expect(refused.status).toBe(413);
    expect(refused.headers.connection).toBe("close");
    conn.socket.end();
    await conn.closed;
    expect(conn.errors).toEqual([]);
  });
});

describe("a change of a project's secrets told by the control plane", () => {
  it("is 204 with a revision; 400 {message} for a bad revision or project, nothing done", async () => {
    const put = (path: string, body: string) =>
      fetch(`${host.url}${path}`, {
        method: "PUT",
        headers: { ...auth, "content-type": "application/json" },
        body,
      });
    const cases = [
      { path: "/internal/projects/p/secrets", body: "{}", says: "revision" },
      { path: "/internal/projects/p/secrets", body: '{"revision":-1}', says: "revision" },
      { path: "/internal/projects/p/secrets", body: "not json", says: "JSON" },
      { path: "/internal/projects/P!/secrets", body: '{"revision":1}', says: "project" },
    ];
    for (const { path, body, says } of cases) {
      const refused = await put(path, body);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { message: string }).message).toContain(says);
    }
    const told = await put("/internal/projects/p/secrets", '{"revision":3}');
    expect(told.status).toBe(204);
  });
});
