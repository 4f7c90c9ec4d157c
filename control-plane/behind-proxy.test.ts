import { Hono } from "hono";
import { expect, it } from "vitest";
import { callerAddress, publicOrigin } from "./behind-proxy.ts";

/** What a request with `headers` reads as, trusting the proxy or not. */
async function seen(headers: Record<string, string>, trustProxy: boolean) {
  const app = new Hono().get("/", (c) =>
    c.json({ ip: callerAddress(c, "127.0.0.1", trustProxy), origin: publicOrigin(c, trustProxy) }),
  );
  const res = await app.request("http://runlet.example.com/", { headers });
  return (await res.json()) as { ip: string; origin: string };
}

it("reads the proxy's X-Forwarded-For and -Proto only when told to trust it", async () => {
  // What the caller wrote comes first; the proxy appends the address it saw.
  const headers = { "x-forwarded-for": "10.9.9.9, 198.51.100.4", "x-forwarded-proto": "https" };
  expect(await seen(headers, true)).toEqual({
    ip: "198.51.100.4",
    origin: "https://runlet.example.com",
  });
  expect(await seen(headers, false)).toEqual({
    ip: "127.0.0.1",
    origin: "http://runlet.example.com",
  });
  expect(await seen({}, true)).toEqual({ ip: "127.0.0.1", origin: "http://runlet.example.com" });
  expect((await seen({ "x-forwarded-proto": "gopher" }, true)).origin).toBe(
    "http://runlet.example.com",
  );
});
