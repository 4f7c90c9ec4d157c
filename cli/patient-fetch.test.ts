// The deploy's request, which waits for its answer however long the replica's start takes
// (Node's fetch gives up after 300 s without a head): it reads as fetch's answer would.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { patientFetch } from "./patient-fetch.ts";

let base: string;
const server = createServer((req, res) => {
  let body = "";
  req.on("data", (chunk) => {
    body += chunk;
  });
  req.on("end", () => {
    if (req.url === "/empty") return void res.writeHead(204).end();
    // After a pause, as a deploy's answer comes once its replica started.
    setTimeout(() => {
      res.writeHead(422, { "content-type": "application/json", "set-cookie": ["a=1", "b=2"] });
      res.end(JSON.stringify({ method: req.method, auth: req.headers.authorization, body }));
    }, 200);
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it("sends the method, headers and body, and answers with the status, headers and body", async () => {
  const res = await patientFetch(`${base}/apps`, {
    method: "POST",
    headers: { authorization: "Bearer t", "content-type": "application/json" },
    body: '{"files":[]}',
  });
  expect(res.status).toBe(422);
  expect(res.headers.get("content-type")).toBe("application/json");
  expect(res.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
  expect(await res.json()).toEqual({ method: "POST", auth: "Bearer t", body: '{"files":[]}' });
  expect((await patientFetch(`${base}/empty`)).status).toBe(204);
});

it("rejects when nothing listens, as fetch does", async () => {
  await expect(patientFetch("http://127.0.0.1:1/")).rejects.toThrow();
});
