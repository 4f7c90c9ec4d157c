// A host's run reports wait on disk until the runs index has them: a host killed in the 25 ms
// before its batch left, or stopped while the index could not be reached, leaves them to the
// next host on the same home. The hosts before are real processes (killed with SIGKILL, or
// stopped); a real receiver plays the control plane's POST /internal/runs.

import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { newId } from "../common/ids.ts";
import { RunReports } from "./run-reports.ts";
import { eventually, startReceiver, TOKEN } from "./test-support.ts";

let dir: string;
let control: Awaited<ReturnType<typeof startReceiver<{ runs: Record<string, unknown>[] }>>>;
let controlUrl: string;
/** Every report the control plane's POST /internal/runs took, in order. */
const reported = () => control.received.flatMap((r) => r.body.runs);

beforeEach(async () => {
  control = await startReceiver();
  controlUrl = control.url;
  dir = await mkdtemp(join(tmpdir(), "runlet-reports-"));
});

afterEach(async () => {
  await control.close();
  await rm(dir, { recursive: true, force: true });
});

const ended = (runId: string) =>
  `reports.ended(${JSON.stringify(runId)}, { projectId: "p", app: "a", function: "f", status: "success", runTimeMs: 3 });`;

/** Runs `code` in a host process of its own, `reports` made on `url` and the journal in `dir`. */
async function inHostProcess(url: string, code: string): Promise<NodeJS.Signals | number | null> {
  const module = new URL("./run-reports.ts", import.meta.url).pathname;
  const script = `
    const { RunReports } = await import(${JSON.stringify(module)});
    const reports = new RunReports(${JSON.stringify(url)}, ${JSON.stringify(TOKEN)}, [], undefined, undefined, ${JSON.stringify(dir)});
    ${code}`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  return new Promise((resolve) => child.on("exit", (code, signal) => resolve(signal ?? code)));
}

const segments = async () => (await readdir(dir)).filter((f) => f.endsWith(".jsonl"));

it("sends the report of a sync run whose host was killed before its batch left", async () => {
  const runId = newId("run");
  // Killed right after the report was queued: its batch would have left 25 ms later.
  const exit = await inHostProcess(
    controlUrl,
    `${ended(runId)} process.kill(process.pid, "SIGKILL");`,
  );
  expect(exit).toBe("SIGKILL");
  expect(reported()).toEqual([]);
  expect(await segments()).toHaveLength(1);

  const next = new RunReports(controlUrl, TOKEN, [], undefined, undefined, dir);
  await eventually(
    async () => reported(),
    (r) => r.length === 1,
  );
  expect(reported()[0]).toMatchObject({ id: runId, status: "success", runTimeMs: 3, async: false });
  await eventually(segments, (s) => s.length === 0);
  await next.close();
});

it("keeps a batch the index could not take for the next host, and removes what arrived", async () => {
  const kept = newId("run");
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const nowhere = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise((resolve) => closed.close(resolve)); // nothing listens there now
  expect(await inHostProcess(nowhere, `${ended(kept)} await reports.close();`)).toBe(0);
  expect(await segments()).toHaveLength(1);

  const next = new RunReports(controlUrl, TOKEN, [], undefined, undefined, dir);
  const fresh = newId("run");
  next.ended(fresh, { projectId: "p", app: "a", function: "f", status: "failure", runTimeMs: 1 });
  await next.close();
  expect(
    reported()
      .map((r) => r.id)
      .sort(),
  ).toEqual([kept, fresh].sort());
  expect(await segments()).toEqual([]);
});

it("leaves alone the reports of a host still running on the same home", async () => {
  const theirs = newId("run");
  const line = JSON.stringify({ id: theirs, projectId: "p", app: "a", function: "f" });
  await writeFile(join(dir, `${process.pid}-1.jsonl`), `${line}\n`);
  const next = new RunReports(controlUrl, TOKEN, [], undefined, undefined, dir);
  await next.close();
  expect(reported()).toEqual([]);
  expect(await segments()).toEqual([`${process.pid}-1.jsonl`]);
});
