import { HEADER } from "../common/consts.ts";
import { startHost } from "./server.ts";
import { configOf, hostClient, newHome, TOKEN } from "./test-support.ts";

const home = await newHome();
const host = await startHost({ port: 0, home, internalToken: TOKEN });
const c = hostClient(host.url);
const SERVER = `require("http").createServer((q,s)=>s.end("ok")).listen(Number(process.env.PORT),"127.0.0.1");`;
await c.deploy(
  "p",
  "w",
  1,
  { "server.js": SERVER },
  configOf("w", {
    runtime: "custom",
    custom: { entrypoint: ["node", "server.js"] },
    scaling: { cooldown: 0 },
  }),
);
for (let i = 0; i < 12; i++) {
  while ((await c.customSpares()).length < 2 || (await c.metrics()).some((a) => a.replicas.length))
    await new Promise((r) => setTimeout(r, 50));
  const t = performance.now();
  const r = await fetch(`${host.url}/internal/http/p/w/`, {
    headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: "run_x" },
  });
  await r.text();
  console.error("total", (performance.now() - t).toFixed(1));
}
await host.close();
process.exit(0);
