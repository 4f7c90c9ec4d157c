// The relay of a custom app whose replica has a network of its own: it listens on a Unix socket
// in the folder the host shares with the sandbox and connects each connection to the app's
// server on the sandbox's own loopback. Its port is written to `port` next to the socket just
// before the app starts, so the relay can start with the sandbox, ahead of any app.
// Usage (inside the sandbox): node relay.mjs <folder>
import { readFileSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { join } from "node:path";

const folder = process.argv[2] ?? "/run/runlet";
const socket = join(folder, "http.sock");
/** @type {number | undefined} */
let port;

const server = createServer((client) => {
  try {
    port ??= Number(readFileSync(join(folder, "port"), "utf8")) || undefined;
  } catch {
    // not written yet: the app has not started
  }
  if (!port) {
    client.destroy();
    return;
  }
  const app = connect(port, "127.0.0.1");
  client.pipe(app);
  app.pipe(client);
  // Either side breaking off ends the other, as a direct connection would.
  client.on("error", () => app.destroy());
  app.on("error", () => client.destroy());
  client.on("close", () => app.destroy());
  app.on("close", () => client.destroy());
});
// A stop's SIGTERM is for the app: the relay carries its answers through its grace period, and
// ends with the sandbox when the app has exited.
process.on("SIGTERM", () => {});
rmSync(socket, { force: true });
server.listen(socket);
