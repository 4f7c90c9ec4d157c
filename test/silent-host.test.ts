// A sync call held by a runtime host that freezes (SIGSTOP: its connections stay open, nothing
// answers) ends 502 once the host's health check goes unanswered, not at the end of its time
// limit (about six minutes). The Worker checks the host it waits on every RUNLET_HOST_PROBE_MS
// (10 s for real, 1 s here); a host that answers keeps its long calls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, sleep, sleeper } from "./apps.ts";
import {
  isAlive,
  json,
  newHome,
  pidOnPort,
  type Runlet,
  removeHome,
  startRunlet,
} from "./harness.ts";

describe("a runtime host that freezes while it holds a sync call", () => {
  let home: string;
  let stack: Runlet;
  let hostPid: number | undefined;

  beforeAll(async () => {
    home = await newHome();
    stack = await startRunlet(home, undefined, { RUNLET_HOST_PROBE_MS: "1000" });
    await client(stack).deploy(sleeper(['name = "slow"', 'runtime = "managed"']));
    hostPid = pidOnPort(stack.ports.host);
  });

  afterAll(async () => {
    if (hostPid && isAlive(hostPid)) process.kill(hostPid, "SIGCONT"); // the last test ends it
    await stack?.stop();
    await removeHome(home);
  });

  it("keeps a long call on a host that answers its health checks", async () => {
    const res = await client(stack).submit("slow", { ms: 3_000 });
    expect(res.status).toBe(200);
    expect((await json(res)).result).toMatchObject({ start: expect.any(Number) });
  });

  it("answers 502 soon after the host stops answering, saying the call may have run", async () => {
    expect(hostPid).toBeDefined();
    const call = client(stack).submit("slow", { ms: 120_000 });
    await sleep(1_500); // the call is running on its replica
    process.kill(hostPid as number, "SIGSTOP");
    const res = await call;
    process.kill(hostPid as number, "SIGCONT");
    expect(res.status).toBe(502);
    expect((await json(res)).message).toBe(
      "the runtime host stopped answering while it held the call (its health check went unanswered); the call may have run there",
    );
  });

  it("keeps a call on a host that is stopping gracefully: it answers 503 and finishes it", async () => {
    // SIGTERM: the host refuses new work (its /healthz 503) and finishes what it holds within
    // its 10 s grace. The Worker took that 503 for silence and cut the call with 502 at its
    // first health check, while the host went on to finish it.
    for (let i = 0; i < 40; i++) {
      // After the freeze above, the Worker passes the host over for a while: until it takes calls.
      if ((await client(stack).submit("slow", { ms: 0 })).status === 200) break;
      await sleep(250);
    }
    const call = client(stack).submit("slow", { ms: 3_500 });
    await sleep(1_000); // the call is running on its replica
    process.kill(hostPid as number, "SIGTERM");
    const res = await call;
    expect(res.status).toBe(200);
    expect((await json(res)).result).toMatchObject({ start: expect.any(Number) });
  });
});
