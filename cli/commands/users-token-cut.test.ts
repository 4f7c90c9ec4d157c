// `runlet users token` (your own) whose answer is cut: renewed, the token it was sent with is
// revoked and the new one reached no one, yet the CLI said "it may have been carried out: check
// what it did before sending it again", which no check could do (each refused as revoked). It
// now asks with that token whether the renewal was made, and says where its user stands. A
// proxy before a real control plane cuts the renewal's connection, before or after sending it on.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { type FirstUser, runlet, withFirstUser } from "./test-support.ts";

let first: FirstUser | undefined;
let proxy: Server;
let proxyUrl: string;
/** Where the proxy cuts `POST /v2/me/token`: before sending it on, or once it was answered. */
let cut: "before" | "after" = "before";

const bodyOf = async (req: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

beforeAll(async () => {
  first = await withFirstUser("users-token-cut", "operator");
  const target = first.baseUrl;
  proxy = createServer(async (req, res) => {
    const body = await bodyOf(req);
    const headers = { ...req.headers } as Record<string, string>;
    delete headers.host;
    const sent = () =>
      fetch(target + (req.url ?? "/"), {
        method: req.method,
        headers,
        body: body.length > 0 ? body : undefined,
      });
    if (req.method === "POST" && req.url === "/v2/me/token") {
      if (cut === "after") await (await sent()).arrayBuffer();
      req.socket.destroy();
      return;
    }
    const answer = await sent();
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "" });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
  await first?.stop();
});

/** A user of the first user's project, with a token of their own, and how its calls fare. */
async function aUser(name: string) {
  const env = first?.env ?? {};
  const made = await runlet(["users", "create", "--name", name, "--expires", "1d", "--json"], env);
  expect(made.code, made.stderr).toBe(0);
  const user = JSON.parse(made.stdout) as { id: string; token: string };
  const renew = () =>
    runlet(["users", "token", "--expires", "5d"], {
      ...env,
      [ENV.baseUrl]: proxyUrl,
      [ENV.token]: user.token,
    });
  const status = async () =>
    (
      await fetch(`${first?.baseUrl}/v2/projects`, {
        headers: { authorization: `Bearer ${user.token}` },
      })
    ).status;
  return { ...user, renew, status };
}

it("says a renewal cut before it was made was not made, and the token still works", async () => {
  const bea = await aUser("Bea");
  cut = "before";
  const said = await bea.renew();
  expect(said.code).toBe(1);
  expect(said.stderr).toContain(
    `the connection to ${proxyUrl} was cut before it answered (did Runlet stop or restart?). It was not renewed: your token still works; run it again.`,
  );
  expect(await bea.status()).toBe(200);
});

it("says a renewal whose answer was lost was made, the token is refused, and who gives a new one", async () => {
  const cid = await aUser("Cid");
  cut = "after";
  const said = await cid.renew();
  expect(said.code).toBe(1);
  expect(said.stderr).toContain(
    `It was renewed, but the new token was lost with the answer, and your token is refused now. To sign in again, an operator who owns one of your projects gives you a new one (runlet users token ${cid.id} --expires 90d)`,
  );
  expect(said.stderr).not.toContain("check what it did");
  expect(await cid.status()).toBe(401);
});
