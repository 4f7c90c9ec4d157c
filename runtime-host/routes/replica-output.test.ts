/** `GET /internal/apps/{project}/{app}/output`: everything an app's replicas wrote. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ReplicaOutput } from "../../common/protocol/host.ts";
import { linesOf } from "../pool/replica-output.ts";
import type { RunningHost } from "../server.ts";
import {
  eventually,
  hostClient,
  isGone,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
  waitUntil,
} from "../test-support.ts";

const APP = {
  "main.mjs": `
console.log("loaded, pid " + process.pid);
export function later(input, ctx) {
  setTimeout(() => console.log("after the call " + ctx.runId), 10);
  ctx.log("in the run's own log");
  return process.pid;
}
export function crash() {
  process.stderr.write("dying: out of luck\\n");
  process.exit(3);
}
`,
};

describe("replica output", () => {
  let home: string;
  let host: RunningHost;
  let client: ReturnType<typeof hostClient>;
  const output = async (project: string, app: string, token = TOKEN) => {
    const res = await fetch(`${host.url}/internal/apps/${project}/${app}/output`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: res.status, body: (await res.json()) as ReplicaOutput };
  };
  const texts = (r: ReplicaOutput["replicas"][number] | undefined) =>
    r?.lines.map((l) => `${l.stream} ${l.text}`);

  beforeEach(async () => {
    home = await newHome();
    host = await startTestHost(home);
    client = hostClient(host.url);
  });

  afterEach(async () => {
    await host.close();
    await removeHome(home);
  });

  it("shows what a replica wrote outside its runs, and a crashed replica's last words", async () => {
    await client.deploy("p", "talk", 1, APP);
    const pid = Number((await client.invoke("p", "talk", "later")).body.result);
    let [running] = (await output("p", "talk")).body.replicas;
    for (let i = 0; i < 50 && texts(running)?.length !== 3; i++) {
      await new Promise((r) => setTimeout(r, 20)); // the timer's line, 10 ms after the call
      [running] = (await output("p", "talk")).body.replicas;
    }
    expect(running).toMatchObject({ pid, version: 1, state: "running", endedAt: null });
    // All it wrote, as a container's log: its own lines and its runs' (which also have their own).
    // The run's line comes over IPC, the timer's through stdout: either may reach the host first.
    expect(texts(running)?.[0]).toBe(`stdout loaded, pid ${pid}`);
    expect(texts(running)?.slice(1).sort()).toEqual([
      "stdout after the call run_test",
      "stdout in the run's own log",
    ]);
    expect(Date.parse(running?.lines[0]?.time ?? "")).toBeGreaterThan(Date.now() - 60_000);

    expect((await client.invoke("p", "talk", "crash")).status).toBe(502);
    await waitUntil(() => isGone(pid));
    const again = Number((await client.invoke("p", "talk", "later")).body.result);
    const { replicas } = (await output("p", "talk")).body;
    expect(replicas.map((r) => [r.pid, r.state])).toEqual([
      [again, "running"],
      [pid, "exited"],
    ]);
    expect(texts(replicas[1])?.at(-1)).toBe("stderr dying: out of luck");
    expect(replicas[1]?.endedAt).not.toBeNull();
    // How it ended, which its state alone did not say; none while it runs.
    expect(replicas[1]?.exit).toEqual({ code: 3, signal: null });
    expect(replicas[0]?.exit).toBeNull();

    // Another project's app of the same name, an app never deployed: nothing; no token: 401.
    expect((await output("q", "talk")).body).toEqual({ replicas: [] });
    expect((await output("p", "ghost")).body).toEqual({ replicas: [] });
    expect((await output("p", "talk", "wrong")).status).toBe(401);
  });

  it("forgets an app's output when the app is removed: a later app of its name starts with none", async () => {
    await client.deploy("p", "gone", 1, APP);
    const first = Number((await client.invoke("p", "gone", "later")).body.result);
    const removed = await fetch(`${host.url}/internal/apps/p/gone`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(removed.status).toBe(204);
    await waitUntil(() => isGone(first));
    // Its last replicas stayed in the host's memory for as long as it ran.
    expect((await output("p", "gone")).body).toEqual({ replicas: [] });
    await client.deploy("p", "gone", 1, APP);
    const second = Number((await client.invoke("p", "gone", "later")).body.result);
    expect((await output("p", "gone")).body.replicas.map((r) => r.pid)).toEqual([second]);
  });

  it("keeps the output of at most `endedOutputs` ended replicas over all apps, each app's last the longest", async () => {
    await host.close();
    host = await startTestHost(home, { limits: { endedOutputs: 2 } });
    client = hostClient(host.url);
    const states = async (app: string) =>
      (await output("p", app)).body.replicas.map((r) => r.state);
    const crash = async (app: string) => {
      expect((await client.invoke("p", app, "crash")).status).toBe(502);
      // Its exit is seen a moment after the call's 502.
      await eventually(
        () => states(app),
        (s) => s.length > 0 && s.every((x) => x === "exited"),
      );
    };
    for (const app of ["a", "b", "c"]) await client.deploy("p", app, 1, APP);
    await crash("a");
    await crash("b");
    await crash("c"); // three ended over the host: a's, the earliest, goes
    expect(await states("a")).toEqual([]);
    expect(await states("b")).toEqual(["exited"]);
    expect(await states("c")).toEqual(["exited"]);
    // b's second end: b's first goes, not c's (earlier than it, but c's last words).
    await crash("b");
    expect(await states("b")).toEqual(["exited"]);
    expect(await states("c")).toEqual(["exited"]);
  });
});

describe("linesOf", () => {
  const chunk = (stream: "stdout" | "stderr", at: number, text: string) => ({
    stream,
    at,
    data: Buffer.from(text),
  });

  it("joins a line written in pieces, per stream, timed by its first piece", () => {
    const lines = linesOf([
      chunk("stdout", 1000, "one\ntw"),
      chunk("stderr", 2000, "err"),
      chunk("stdout", 3000, "o\nthree"),
      chunk("stderr", 4000, "or\n"),
    ]);
    expect(lines.map((l) => [l.stream, l.text, Date.parse(l.time)])).toEqual([
      ["stdout", "one", 1000],
      ["stdout", "two", 1000],
      ["stderr", "error", 2000],
      ["stdout", "three", 3000],
    ]);
  });
});
