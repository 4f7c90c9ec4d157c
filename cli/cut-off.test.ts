// A request whose connection is cut after it was sent (Runlet killed or restarted mid-call): the
// CLI said "cannot reach … is Runlet running?", as if nothing had been sent, though a run killed
// with its Worker mid-call had run to its end (seen: `runlet run sleeper` with workerd killed).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ENV } from "../common/consts.ts";
import { newId } from "../common/ids.ts";
import { runlet } from "./commands/test-support.ts";

let server: Server;
/** A server that reads each request whole, then closes its connection without an answer. */
let cutting: string;
/** Where nothing listens. */
let nothing: string;

async function listen(s: Server): Promise<string> {
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  server = createServer((req) => {
    req.resume();
    req.on("end", () => req.socket.destroy());
  });
  cutting = await listen(server);
  const gone = createServer();
  nothing = await listen(gone);
  await new Promise((resolve) => gone.close(resolve));
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const env = (url: string) => ({
  [ENV.baseUrl]: url,
  [ENV.apiUrl]: url,
  [ENV.project]: "prj_1",
  [ENV.token]: "t",
  RUNLET_WEBHOOK_SECRET: "s",
});

const cut = (what: string, url: string) =>
  new RegExp(
    `^runlet \\w+: ${what} failed: the connection to ${url} was cut before it answered \\(did Runlet stop or restart\\?\\)\\. The request had reached it, so it may have been carried out: `,
  );

it("says a run whose connection was cut may have run, and how to find it", async () => {
  const said = await runlet(["run", "hello", "--data", "{}"], env(cutting));
  expect(said.code).toBe(1);
  expect(said.stderr).toMatch(cut("run", cutting));
  expect(said.stderr).toContain("look for it with runlet runs --app hello before running it again");
  expect(said.stderr).not.toContain("cannot reach");
  const keyed = await runlet(["run", "hello", "--idempotency-key", "k1"], env(cutting));
  expect(keyed.stderr).toContain("(the same --idempotency-key does not run it again)");
});

it("says a management request or a run's cancel that was cut may have been carried out", async () => {
  const deleted = await runlet(["apps", "delete", "hello", "--yes"], env(cutting));
  expect(deleted.code).toBe(1);
  expect(deleted.stderr).toMatch(cut(".+", cutting));
  expect(deleted.stderr).not.toContain("cannot reach");
  for (const args of [
    ["apps", "delete", "hello", "--yes"],
    ["tokens", "revoke", "sa_1", "--yes"],
    ["secrets", "delete", "DB_URL", "--yes"],
  ]) {
    const said = await runlet(args, env(cutting));
    expect(said.stderr, args.join(" ")).toContain(
      "may have been carried out: sending it again does no harm: nothing is deleted twice",
    );
  }
  const cancelled = await runlet(["cancel", newId("run"), "--app", "hello"], env(cutting));
  expect(cancelled.code).toBe(1);
  expect(cancelled.stderr).toMatch(cut(".+", cutting));
});

it("says a read that was cut changed nothing, and to run it again", async () => {
  for (const args of [
    ["apps"],
    ["runs", "--app", "hello"],
    ["audit-log"],
    ["secrets", "get", "DB_URL"],
    ["status", newId("run"), "--app", "hello"],
  ]) {
    const said = await runlet(args, env(cutting));
    expect(said.code, args.join(" ")).toBe(1);
    expect(said.stderr, args.join(" ")).toContain(
      `the connection to ${cutting} was cut before it answered (did Runlet stop or restart?). It only reads, so it changed nothing: run it again once Runlet answers`,
    );
    expect(said.stderr, args.join(" ")).not.toContain("may have been carried out");
  }
});

it("says how to see whether a cut deploy, token or secret was made", async () => {
  const app = await mkdtemp(join(tmpdir(), "runlet-cut-deploy-"));
  try {
    await writeFile(join(app, "runlet.toml"), 'name = "hello"\n');
    await writeFile(join(app, "main.mjs"), "export const run = () => 1;\n");
    const deployed = await runlet(["deploy", app], env(cutting));
    expect(deployed.code).toBe(1);
    expect(deployed.stderr).toContain(`deploy failed: the connection to ${cutting} was cut`);
    expect(deployed.stderr).toContain(
      "runlet apps versions hello shows whether it was recorded (a version deployed just now); if it was not, the version before still answers, and sending it again is safe",
    );
  } finally {
    await rm(app, { recursive: true, force: true });
  }
  const created = await runlet(
    ["tokens", "create", "--name", "ci", "--expires", "1d"],
    env(cutting),
  );
  expect(created.stderr).toContain(
    "runlet tokens list shows whether 'ci' was made; if it was, its token reached no one: revoke it (runlet tokens revoke <its id>) and create it again",
  );
  const stored = await runlet(["secrets", "set", "DB_URL", "x"], env(cutting));
  expect(stored.stderr).toContain("sending it again does no harm: it stores the same value");
});

it("still says it cannot reach a server that is not there", async () => {
  for (const args of [
    ["run", "hello"],
    ["apps", "delete", "hello", "--yes"],
  ]) {
    const said = await runlet(args, env(nothing));
    expect(said.code, args.join(" ")).toBe(1);
    expect(said.stderr).toMatch(/failed: cannot reach .* — is Runlet running/);
  }
});
