// A sync call held by a runtime host that freezes (SIGSTOP: its connections stay open, nothing
// answers) ends 502 once the host's health check goes unanswered, not at the end of its time
// limit (about six minutes). The Worker checks the host it waits on every RUNLET_HOST_PROBE_MS
// (10 s for real, 1 s here); a host that answers keeps its long calls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, sleep, sleeper } from "./apps.ts";
import { json, newHome, pidOnPort, type Runlet, removeHome, startRunlet } from "./harness.ts";

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
    if (hostPid) process.kill(hostPid, "SIGCONT");
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
});
