// A host killed and restarted under another join token within 15 s finds its address held by
// its own old entry (409): it tries again until that entry is down and takes it over, where it
// stopped for good (exit 3) at the first refusal. One whose address stays held (another host is
// heard from there) still stops, saying so. A real control plane stand-in over a socket.
import { createServer, type Server } from "node:http";
import { afterEach, expect, it, vi } from "vitest";
import { freePort } from "../cli/processes.ts";
import { Membership } from "./membership.ts";
import { Refused } from "./refusal.ts";

let server: Server | undefined;
let membership: Membership | undefined;

afterEach(async () => {
  membership?.stop();
  vi.restoreAllMocks();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

const HELD = "http://127.0.0.1:1 is the address of runtime host 'far1' (hst_old), drained, …";

const NAME_HELD = "the name 'far1' is runtime host hst_other's, at http://10.0.0.2:8790, up, …";

/**
 * A control plane that refuses the registration `refusals` times (409, the address held, or the
 * name: `held` says which, as the control plane's body does; an older one's says nothing).
 */
async function controlPlane(refusals: number, held?: "name"): Promise<string> {
  const port = await freePort();
  let asked = 0;
  server = createServer((req, res) => {
    req.resume();
    res.setHeader("content-type", "application/json");
    if (asked++ < refusals) {
      res.statusCode = 409;
      const message = held === "name" ? NAME_HELD : HELD;
      res.end(JSON.stringify({ message, code: "conflict", ...(held ? { held } : {}) }));
      return;
    }
    res.end(
      JSON.stringify({ hostId: "hst_old", internalToken: "t".repeat(32), heartbeatMs: 60_000 }),
    );
  });
  await new Promise<void>((resolve) => server?.listen(port, "127.0.0.1", resolve));
  return `http://127.0.0.1:${port}`;
}

function join(controlPlaneUrl: string, addressWaitMs?: number) {
  const logged: string[] = [];
  vi.spyOn(console, "error").mockImplementation((line: string) => {
    logged.push(line);
  });
  membership = new Membership({
    controlPlaneUrl,
    hostToken: () => "rlh_other",
    heartbeat: () => ({ state: "up", busy: 0, queued: 0, apps: [] }),
    answered: () => {},
    ...(addressWaitMs ? { addressWaitMs } : {}),
  });
  const joined = membership.join({
    name: "far1",
    address: "http://127.0.0.1:1",
    slots: 4,
    memoryMb: 1024,
  });
  return { joined, logged };
}

it("tries again while its address is held, and takes its old entry over once the control plane lets it", async () => {
  const { joined, logged } = join(await controlPlane(2));
  expect((await joined).hostId).toBe("hst_old");
  expect(logged).toEqual([
    `runtime host: the control plane refused this host: ${HELD}; trying again for up to 20 s`,
  ]);
});

it("stops, saying so, when the address is still held after its wait: another host is heard from there", async () => {
  const { joined } = join(await controlPlane(1_000), 1_000);
  const refused = await joined.catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(Refused);
  expect((refused as Error).message).toBe(
    `the control plane refused this host: ${HELD}. Still so after 1 s: that host is heard from, so it is another one: give this host its own address`,
  );
});

it("tries again while its name is a live host's elsewhere, and stops, saying to give it another name, if it stays so", async () => {
  // A host restarted at another address finds its old entry holding the name until it is down.
  const { joined, logged } = join(await controlPlane(1, "name"));
  expect((await joined).hostId).toBe("hst_old");
  expect(logged).toEqual([
    `runtime host: the control plane refused this host: ${NAME_HELD}; trying again for up to 20 s`,
  ]);
  membership?.stop();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  const again = join(await controlPlane(1_000, "name"), 1_000);
  const refused = await again.joined.catch((err: unknown) => err);
  expect((refused as Error).message).toBe(
    `the control plane refused this host: ${NAME_HELD}. Still so after 1 s: that host is heard from, so it is another one: give this host its own name (--name)`,
  );
});
