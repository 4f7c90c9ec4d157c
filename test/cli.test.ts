import { spawnSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../common/ids.ts";
import { eventually } from "../runtime-host/test-support.ts";
import { cliInProcess as command } from "./cli-in-process.ts";
import { cli, json, newHome, type Runlet, removeHome, startRunlet } from "./harness.ts";

// The administrative CLI against a real local Runlet: tokens, secrets, the audit log and runs.
// `command` runs the CLI in this process; `cli` runs the `runlet` binary, for a command's
// standard input and a follow that goes on while others run.

describe("runlet tokens, secrets, audit-log and runs", () => {
  let runlet: Runlet;
  let home: string;

  beforeAll(async () => {
    home = await newHome();
    // A host token for `runlet host` elsewhere, left in the shell: not what the local hosts
    // join with (they had, and were refused, so the start failed). And a bootstrap token for
    // `runlet init` elsewhere: the local control plane still makes its local owner.
    runlet = await startRunlet(home, undefined, {
      RUNLET_HOST_TOKEN: "rlh_someone_elses",
      RUNLET_BOOTSTRAP_TOKEN: "bootstrap-token-of-another-control-plane",
      // The run API keeps the control plane's word on a token 1 s here, not 10 s.
      RUNLET_AUTH_CACHE_MS: "1000",
    });
  });

  afterAll(async () => {
    await runlet?.stop();
    await removeHome(home);
  });

  /**
   * examples/hello deployed by the CLI, once for the file: the cases that only call it share it
   * (a deploy, its start check included, was a second or two of each).
   */
  let helloDeployed: Promise<number | null> | undefined;
  const deployHello = async () => {
    helloDeployed ??= command(["deploy", "examples/hello"], runlet.env).then((r) => r.code);
    expect(await helloDeployed).toBe(0);
  };

  const apps = (token: string) =>
    fetch(`${runlet.local.baseUrl}/v2/projects/${runlet.local.projectId}/apps`, {
      headers: { authorization: `Bearer ${token}` },
    });

  it("makes a caller token that calls the apps through the run API, and can deploy nothing", async () => {
    // The member token, the least there was, could deploy code that read every secret.
    await deployHello();
    const args = ["tokens", "create", "--name", "web", "--expires", "1d", "--role", "caller"];
    const created = await command(args, runlet.env);
    expect(created.code, created.stderr).toBe(0);
    const caller = { ...runlet.env, RUNLET_TOKEN: created.stdout.trim() };
    const ran = await command(["run", "hello", "--json"], caller);
    expect(ran.code, ran.stderr).toBe(0);
    const runId = JSON.parse(ran.stdout).run_id as string;
    const status = await command(["status", runId, "--app", "hello", "--json"], caller);
    expect(JSON.parse(status.stdout)).toMatchObject({ run_id: runId, status: "success" });
    const deploy = await command(["deploy", "examples/hello"], caller);
    expect(deploy.code).toBe(1);
    expect(deploy.stderr).toContain("this service account's role is caller");
  });

  it("creates a token that works until it is revoked, and lists it", async () => {
    const created = await command(
      ["tokens", "create", "--name", "ci", "--expires", "30d"],
      runlet.env,
    );
    expect(created.code).toBe(0);
    expect(created.stderr).toMatch(/shown only this once/);
    const token = created.stdout.trim();
    expect(token.split(".")).toHaveLength(3);

    // The new token drives the CLI too.
    const listedApps = await command(["apps", "--json"], { ...runlet.env, RUNLET_TOKEN: token });
    expect(listedApps.code).toBe(0);

    const listed = await command(["tokens", "list", "--json"], runlet.env);
    const account = JSON.parse(listed.stdout).serviceAccounts.find(
      (a: { name: string }) => a.name === "ci",
    );
    expect(account).toMatchObject({ role: "member", revokedAt: null });
    const table = await command(["tokens", "list"], runlet.env);
    expect(table.stdout).toMatch(new RegExp(`${account.id}\\s+ci\\s+member\\s+\\S+\\s+active`));

    expect((await apps(token)).status).toBe(200);
    const revoked = await command(["tokens", "revoke", account.id], runlet.env);
    expect(revoked.code).toBe(0);
    const after = await apps(token);
    expect(after.status).toBe(401);
    expect((await json(after)).message).toBe("token has been revoked");
  });

  it("refuses a bad expiry before calling the API, and says why", async () => {
    const bad = await command(["tokens", "create", "--name", "x", "--expires", "soon"], runlet.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^runlet tokens: --expires takes a duration from now \(30d/);
    const past = await command(
      ["tokens", "create", "--name", "x", "--expires", "2020-01-01T00:00:00Z"],
      runlet.env,
    );
    expect(past.code).toBe(1);
    expect(past.stderr).toMatch(/^runlet tokens: --expires 2020-01-01T00:00:00Z is past/);
    // The API refuses it too, on the record (the audit trail below reads the failure).
    const { baseUrl, projectId, token } = runlet.local;
    const refused = await fetch(`${baseUrl}/v2/projects/${projectId}/service-accounts`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "x", expiresAt: "2020-01-01T00:00:00Z" }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("expiresAt: must be in the future");
  });

  it("sets a secret from stdin and gets exactly it back", async () => {
    const value = "postgres://u:p@db/app?ssl=true ünïcode";
    const set = await cli(["secrets", "set", "DB_URL"], runlet.env, `${value}\n`);
    expect(set.code).toBe(0);
    const got = await command(["secrets", "get", "DB_URL"], runlet.env);
    expect(got.stdout).toBe(`${value}\n`);
    const asJson = await command(["secrets", "get", "DB_URL", "--json"], runlet.env);
    expect(JSON.parse(asJson.stdout)).toEqual({ name: "DB_URL", value });
    const missing = await command(["secrets", "get", "NOPE"], runlet.env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/\(404\): secret 'NOPE' not found/);
    // One set by mistake is deleted.
    expect((await command(["secrets", "set", "OOPS", "x"], runlet.env)).code).toBe(0);
    const deleted = await command(["secrets", "delete", "OOPS"], runlet.env);
    expect(deleted.stdout).toBe("Deleted OOPS.\n");
    expect((await command(["secrets", "get", "OOPS"], runlet.env)).code).toBe(1);
  });

  it("shows the audit trail of all that, filtered and paged", async () => {
    const all = await command(["audit-log", "--all", "--limit", "2", "--json"], runlet.env);
    expect(all.code).toBe(0);
    const { logs, retentionDays } = JSON.parse(all.stdout);
    expect(retentionDays).toBe(7);
    const actions = logs.map(
      (l: { action: string; outcome: string }) => `${l.action}:${l.outcome}`,
    );
    for (const expected of [
      "service_accounts.create:success",
      "service_accounts.revoke:success",
      "secrets.write:success",
      "secrets.read:success",
      "secrets.read:failure",
      "service_accounts.create:failure",
    ]) {
      expect(actions).toContain(expected);
    }
    // Nothing a secret's value could hide in.
    expect(JSON.stringify(logs)).not.toContain("postgres://");
    // --all with pages of 2 returns every entry one big page holds, newest first, no repeats.
    const onePage = await command(["audit-log", "--limit", "200", "--json"], runlet.env);
    const page = JSON.parse(onePage.stdout);
    expect(page.hasMore).toBe(false);
    const ids = (l: { id: string }[]) => l.map((e) => e.id);
    expect(ids(logs)).toEqual(ids(page.logs));
    expect(new Set(ids(logs)).size).toBe(logs.length);
    expect(all.stderr).toContain(`${logs.length} in all.`);

    const failures = await command(["audit-log", "--outcome", "failure", "--json"], runlet.env);
    const failed = JSON.parse(failures.stdout).logs as { outcome: string }[];
    expect(failed.length).toBeGreaterThanOrEqual(2);
    expect(failed.every((l) => l.outcome === "failure")).toBe(true);

    const readable = await command(["audit-log", "--action", "secrets.read"], runlet.env);
    expect(readable.stdout).toMatch(/^TIME\s+ACTION\s+OUTCOME\s+ACTOR\s+TARGET/);
    expect(readable.stdout).toMatch(/secrets\.read\s+success\s+local owner \(user usr_/);
    expect(readable.stderr).toMatch(/keeps 7 days of audit log/);

    const bad = await command(["audit-log", "--limit", "500"], runlet.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^runlet audit-log: --limit takes a whole number from 1 to 200/);
  });

  it("lists secret names without values, and exports the audit log to a file or stdout", async () => {
    const listed = await command(["secrets", "list", "--json"], runlet.env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain("postgres://");
    const names = JSON.parse(listed.stdout).secrets as { name: string; updatedBy: string }[];
    expect(names).toContainEqual(expect.objectContaining({ name: "DB_URL" }));
    const table = await command(["secrets", "list"], runlet.env);
    expect(table.stdout).toMatch(/^NAME\s+UPDATED\s+BY\n(.*\n)*DB_URL\s+\S+Z\s+\S.* \(usr_\w+\)\n/);

    const file = join(home, "audit.csv");
    const csv = await command(["audit-log", "--export", "csv", "--output", file], runlet.env);
    expect(csv.code).toBe(0);
    const page = JSON.parse(
      (await command(["audit-log", "--limit", "200", "--json"], runlet.env)).stdout,
    );
    // The export is on the record, and lists itself first.
    expect(page.logs[0]).toMatchObject({ action: "audit_log.export", outcome: "success" });
    expect(csv.stderr).toBe(`wrote ${page.logs.length} entries to ${file}\n`);
    const lines = (await readFile(file, "utf8")).split("\r\n");
    expect(lines[0]).toMatch(/^id,timestamp,action,actor_type,actor_id,actor_name,outcome,/);
    expect(lines[1]?.split(",")[0]).toBe(page.logs[0].id);

    const reads = await command(
      ["audit-log", "--export", "ndjson", "--action", "secrets.read"],
      runlet.env,
    );
    expect(reads.code).toBe(0);
    const exported = reads.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const viaList = await command(
      ["audit-log", "--action", "secrets.read", "--all", "--json"],
      runlet.env,
    );
    expect(exported).toEqual(JSON.parse(viaList.stdout).logs);
    expect(reads.stderr).toBe(`wrote ${exported.length} entries to standard output\n`);

    const bad = await command(["audit-log", "--export", "xml"], runlet.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--export must be csv or ndjson/);
    const both = await command(["audit-log", "--export", "csv", "--limit", "5"], runlet.env);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/leave out --limit/);
    const refused = await command(["audit-log", "--export", "csv", "--from", "soon"], runlet.env);
    expect(refused.stderr).toContain("--from takes an RFC 3339 time");
  });

  it("deploys the custom-runtime example, which answers the call its deploy prints", async () => {
    const deployed = await command(["deploy", "examples/custom"], runlet.env);
    expect(deployed.code, deployed.stderr).toBe(0);
    // The outcome on stdout; how to call it is a hint, on stderr.
    expect(deployed.stdout).toMatch(/^Deployed hello-http v\d+ \(custom runtime\) in \d+ ms\n$/);
    const url = /Call it: curl .* (http\S+)/.exec(deployed.stderr)?.[1] as string;
    expect(url).toMatch(/\/v4\/prj_\w+\/hello-http\/$/);
    const res = await fetch(`${url}?name=Ada`, {
      headers: { authorization: `Bearer ${runlet.local.token}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ greeting: "Hello, Ada!" });
    // runlet run POSTs to /run, which the example answers 404 {"message": "not found"}: said
    // as the app's own answer, not as if Runlet had found no app.
    const ran = await command(["run", "hello-http"], runlet.env);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(
      /^runlet run: hello-http is a custom app: its server answered POST \/run with 404: \{"message":"not found"\} \(`runlet run` sends it POST \/<function>/m,
    );
  });

  // Skipped without python3, as the sandbox's tests are without bubblewrap.
  it.skipIf(spawnSync("python3", ["--version"]).status !== 0)(
    "deploys the Python example, which answers, prints to its logs, and says a requirements.txt is not installed",
    async () => {
      const deployed = await command(["deploy", "examples/python"], runlet.env);
      expect(deployed.code, deployed.stderr).toBe(0);
      expect(deployed.stderr).not.toMatch(/not installed/);
      const url = /Call it: curl .* (http\S+)/.exec(deployed.stderr)?.[1] as string;
      const auth = { authorization: `Bearer ${runlet.local.token}` };
      const hello = await fetch(`${url}?name=Ada`, { headers: auth });
      expect(await hello.json()).toMatchObject({ greeting: "Hello, Ada!", runId: /^run_/ });
      const echo = await fetch(`${url}echo`, { method: "POST", headers: auth, body: '{"n":1}' });
      expect(await echo.json()).toEqual({ echo: { n: 1 }, bytes: 7 });
      // A POST it has no route for, then a GET: the first's body, left unread, once began the
      // next request on the host's kept-alive connection (http.server's 501 "Unsupported method
      // ('{}GET')"). What 'runlet run hello-python' sends.
      const nope = await fetch(url, { method: "POST", headers: auth, body: "{}" });
      expect(nope.status).toBe(404);
      const after = await fetch(url, { headers: auth });
      expect(after.status).toBe(200);
      const logs = await command(["logs", "--app", "hello-python"], runlet.env);
      expect(logs.stdout).toMatch(/stdout {2}greeting Ada/); // print(), while it runs

      const folder = join(home, "with-requirements");
      await mkdir(folder);
      for (const file of ["runlet.toml", "server.py"])
        await writeFile(join(folder, file), await readFile(join("examples/python", file)));
      await writeFile(join(folder, "requirements.txt"), "requests==2.32.3\n");
      const noted = await command(["deploy", folder], runlet.env);
      expect(noted.code).toBe(0);
      expect(noted.stderr).toMatch(/requirements.txt is uploaded but not installed/);
    },
  );

  it("lists runs after a call", async () => {
    await deployHello();
    expect((await command(["run", "hello"], runlet.env)).code).toBe(0);
    let listed: { runs: { app: string; status: string }[] } = { runs: [] };
    for (let i = 0; i < 50 && listed.runs.length === 0; i++) {
      listed = JSON.parse((await command(["runs", "--app", "hello", "--json"], runlet.env)).stdout);
      if (listed.runs.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(listed.runs[0]).toMatchObject({ app: "hello", status: "success" });
    const table = await command(["runs", "--sync"], runlet.env);
    expect(table.stdout).toMatch(/^RUN\s+APP\s+FUNCTION\s+MODE\s+STATUS/);
    expect((await command(["run", "hello"], runlet.env)).code).toBe(0);
    const paged = await command(["runs", "--limit", "1"], runlet.env);
    expect(paged.stderr).toMatch(/^More runs: --all/m);
    expect(paged.stdout).not.toMatch(/More runs/);
    const every = JSON.parse(
      (await command(["runs", "--all", "--limit", "1", "--json"], runlet.env)).stdout,
    );
    expect(every.runs.length).toBeGreaterThanOrEqual(2);
    // --failed with --app names the app: "No run has a failed delivery" read as none at all.
    const none = await command(["redeliver", "--failed", "--app", "hello"], runlet.env);
    expect(none.stderr.trim()).toBe("No run of 'hello' has a failed delivery.");
    expect(none.stdout).toBe("");
    // A name that is no app and has no runs is a mistake, as with runs --app.
    const typo = await command(["redeliver", "--failed", "--app", "my-app"], runlet.env);
    expect([typo.code, typo.stdout]).toEqual([1, ""]);
    expect(typo.stderr).toMatch(/^runlet redeliver: app 'my-app' is not deployed in project/);
  });

  it("runs in the background with --async, follows it with status, and cannot cancel it once ended", async () => {
    await deployHello();
    const started = await command(
      ["run", "hello", "--async", "--data", '{"name":"Bo"}'],
      runlet.env,
    );
    expect(started.code).toBe(0);
    const runId = started.stdout.trim();
    expect(runId).toMatch(/^run_[0-9a-z]{26}$/);
    expect(started.stderr).toContain(`runlet status ${runId}`);
    // At once, though the runs index may not have it yet: --wait reads it until it has ended.
    const waited = await command(["status", runId, "--wait", "--json"], runlet.env);
    expect(waited.code).toBe(0);
    expect(JSON.parse(waited.stdout)).toMatchObject({ status: "success", async: true });
    const table = await command(["status", runId], runlet.env);
    expect(table.stdout).toMatch(/^status\s+success$/m);
    const cancel = await command(["cancel", runId], runlet.env);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toMatch(/has already ended: success/);
  });

  it("says what went wrong as JSON with --json, and refuses arguments and flags it cannot take", async () => {
    await deployHello();
    const ran = await command(["run", "hello", "--json"], runlet.env);
    const runId = JSON.parse(ran.stdout).run_id as string;
    const cancel = await command(["cancel", runId, "--json"], runlet.env);
    expect(cancel.code).toBe(1);
    expect(JSON.parse(cancel.stdout)).toEqual({
      message: "only async runs can be cancelled",
      status: 409,
      code: "conflict",
    });
    const secret = await command(["secrets", "get", "NO_SUCH_SECRET", "--json"], runlet.env);
    expect(secret.code).toBe(1);
    expect(JSON.parse(secret.stdout)).toMatchObject({ status: 404, code: "not_found" });

    const empty = await cli(["secrets", "set", "EMPTY_ONE"], runlet.env, "");
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain("no value on standard input for EMPTY_ONE: nothing was stored");
    const missing = await command(["run", "no-such-app", "--json"], runlet.env);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ status: 404, code: "not_found" });
    // An app not deployed: no run was made, so no run id is offered to look up; a function the
    // app does not export was found out by a run, whose id runlet status finds.
    const unknownApp = await command(["run", "no-such-app"], runlet.env);
    expect(unknownApp.stderr).toMatch(/run failed \(404\): app 'no-such-app' is not deployed/);
    expect(unknownApp.stderr).not.toContain("run id:");
    const unknownFn = await command(["run", "hello", "nofn"], runlet.env);
    expect(unknownFn.stderr).toMatch(/run failed \(404\): app 'hello' has no function 'nofn'/);
    const fnRunId = /run id: (run_\w+)/.exec(unknownFn.stderr)?.[1] ?? "";
    // (The host reports a sync run to the index a moment after its answer.)
    const fnRun = await eventually(
      () => command(["status", fnRunId, "--json"], runlet.env),
      (status) => status.code === 0,
      10_000,
    );
    expect(JSON.parse(fnRun.stdout)).toMatchObject({ run_id: fnRunId, status: "failure" });
    // A status a function returned, even one Runlet's refusals also use, is a run's.
    const dir = join(home, "statuses");
    await mkdir(dir);
    await writeFile(join(dir, "runlet.toml"), 'name = "statuses"\nruntime = "managed"\n');
    await writeFile(
      join(dir, "main.mjs"),
      'export const run = ({ status }) => ({ status_code: status, message: "said so" });\n',
    );
    expect((await command(["deploy", dir], runlet.env)).code).toBe(0);
    for (const status of [400, 404, 405]) {
      const own = await command(
        ["run", "statuses", "--data", JSON.stringify({ status })],
        runlet.env,
      );
      expect(own.stderr).toContain(`the function answered ${status}: {"run_id":"run_`);
      expect(own.stderr).toMatch(/run id: run_\w+/);
    }
    // A 204 has no body: --json says its status, not {run_id} alone as an async acceptance.
    const none = await command(
      ["run", "statuses", "--data", '{"status":204}', "--json"],
      runlet.env,
    );
    expect(none.code, none.stderr).toBe(0);
    expect(JSON.parse(none.stdout)).toEqual({
      run_id: expect.stringMatching(/^run_/),
      result: null,
      run_time_ms: null,
      status: 204,
    });
    // A token refused: no run was made, so no run id is offered to look up.
    const forged = `${runlet.local.token.slice(0, -4)}AAAA`;
    const refused = await command(["run", "hello"], { ...runlet.env, RUNLET_TOKEN: forged });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/run failed \(401\)/);
    expect(refused.stderr).not.toContain("run id:");
    // The reason alone, not the usage text after it; and an unknown command says so in JSON.
    const noId = await command(["status", "--json"], runlet.env);
    expect(JSON.parse(noId.stdout)).toEqual({ message: "give one run id" });
    const unknown = await command(["frob", "--json"], runlet.env);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout)).toEqual({ message: "unknown command 'frob'" });

    const extra = await command(["run", "hello", "run", "stray"], runlet.env);
    expect(extra.code).toBe(1);
    expect(extra.stderr).toContain("unexpected 'stray'");
    const both = await command(["runs", "--async", "--sync"], runlet.env);
    expect(both.code).toBe(1);
    expect(both.stderr).toContain("--async or --sync, not both");
    const output = join(runlet.home, "no-such-folder", "log.csv");
    const exported = await command(
      ["audit-log", "--export", "csv", "--output", output],
      runlet.env,
    );
    expect(exported.code).toBe(1);
    expect(exported.stderr).toContain(`cannot write ${output}: ENOENT`);
  });

  it("sends a run again with --idempotency-key: the same run, and 422 for another body", async () => {
    await deployHello();
    const args = ["run", "hello", "--async", "--idempotency-key", "cli-1", "--data", '{"n":1}'];
    const first = await command(args, runlet.env);
    const again = await command(args, runlet.env);
    expect(first.code).toBe(0);
    expect(again.stdout.trim()).toBe(first.stdout.trim());
    const other = await command([...args.slice(0, -1), '{"n":2}'], runlet.env);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/\(422\): this Idempotency-Key was used with a different request/);
  });

  it("takes a run's input from a file (--data @FILE) or standard input (--data -)", async () => {
    await deployHello();
    // Past the 128 KiB one argument may hold: such an input could not be given at all.
    const name = "a".repeat(300_000);
    const file = join(home, "input.json");
    await writeFile(file, JSON.stringify({ name }));
    const greeting = `Hello, ${name}!`;
    const fromFile = await command(["run", "hello", "--data", `@${file}`, "--json"], runlet.env);
    expect(fromFile.code).toBe(0);
    expect(JSON.parse(fromFile.stdout).result.greeting).toBe(greeting);
    const piped = ["run", "hello", "--data", "-", "--json"];
    const fromStdin = await cli(piped, runlet.env, JSON.stringify({ name }));
    expect(fromStdin.code).toBe(0);
    expect(JSON.parse(fromStdin.stdout).result.greeting).toBe(greeting);
    // An empty one is an empty body, the input null, as the run API takes it (it was refused).
    const empty = await command(["run", "hello", "--data", "", "--json"], runlet.env);
    expect(empty.code, empty.stderr).toBe(0);
    expect(JSON.parse(empty.stdout).result.greeting).toBe("Hello, world!");

    const missing = await command(["run", "hello", "--data", "@no-such.json"], runlet.env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("--data @no-such.json: cannot read no-such.json: ENOENT");
    const broken = await cli(["run", "hello", "--data", "-"], runlet.env, '{"name": ');
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain("--data -: standard input is not valid JSON");
  });

  it("says a webhook without a secret goes unsigned, and refuses a secret without a webhook", async () => {
    await deployHello();
    const received: (string | undefined)[] = [];
    const receiver = createServer((req, res) => {
      received.push(req.headers["x-runlet-webhook-signature"] as string | undefined);
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    try {
      const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const env = { ...runlet.env, RUNLET_WEBHOOK_SECRET: "" };
      const unsigned = await command(["run", "hello", "--webhook", hook], env);
      expect(unsigned.code).toBe(0);
      expect(unsigned.stderr).toContain("Note: the webhook delivery is unsigned");
      const signed = await command(["run", "hello", "--webhook", hook], {
        ...env,
        RUNLET_WEBHOOK_SECRET: "whsec_cli",
      });
      expect(signed.stderr).not.toContain("unsigned");
      for (let i = 0; i < 50 && received.length < 2; i++)
        await new Promise((r) => setTimeout(r, 100));
      const kinds = received.map((s) => (s?.startsWith("v1,") ? "signed" : "unsigned"));
      expect(kinds.sort()).toEqual(["signed", "unsigned"]);

      // It was dropped without a word, and the call ran all the same.
      const stray = await command(["run", "hello", "--webhook-secret", "whsec_cli"], env);
      expect(stray.code).toBe(1);
      expect(stray.stderr).toContain(
        "--webhook-secret signs the delivery to --webhook: give --webhook URL too",
      );
    } finally {
      receiver.close();
    }
  });

  it("shows what a run wrote with runlet logs", async () => {
    const dir = join(home, "logger");
    await mkdir(dir);
    await writeFile(join(dir, "runlet.toml"), 'name = "logger"\nruntime = "managed"\n');
    await writeFile(
      join(dir, "main.mjs"),
      `console.log("loading");
export async function run(input, ctx) {
  ctx.log("greeting", input.name);
  await new Promise((r) => setTimeout(r, 5));
  console.error("a warning");
  return "ok";
}`,
    );
    expect((await command(["deploy", dir], runlet.env)).code).toBe(0);
    const ran = await command(["run", "logger", "--data", '{"name":"Ada"}', "--json"], runlet.env);
    expect(ran.code).toBe(0);
    const runId = JSON.parse(ran.stdout).run_id as string;

    // The Worker adds the run to the runs index after answering: a moment later at most.
    let shown = await command(["logs", runId], runlet.env);
    for (let i = 0; i < 50 && shown.code !== 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      shown = await command(["logs", runId], runlet.env);
    }
    expect(shown.code).toBe(0);
    const time = "\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z";
    expect(shown.stdout).toMatch(
      new RegExp(`^${time}  stdout  greeting Ada\\n${time}  stderr  a warning\\n$`),
    );
    const asJson = JSON.parse((await command(["logs", runId, "--json"], runlet.env)).stdout);
    expect(asJson).toMatchObject({ runId, truncated: false });
    expect(asJson.lines.map((l: { stream: string; text: string }) => [l.stream, l.text])).toEqual([
      ["stdout", "greeting Ada"],
      ["stderr", "a warning"],
    ]);

    const unknown = newId("run");
    const missing = await command(["logs", unknown], runlet.env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`(404): run '${unknown}' not found in project`);
    const bad = await command(["logs"], runlet.env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^runlet logs: give one run id/);
  });

  it("follows a run's lines with runlet logs --follow until the run ends, each line once, an unfinished one once it ends", async () => {
    const dir = join(home, "ticker");
    await mkdir(dir);
    await writeFile(join(dir, "runlet.toml"), 'name = "ticker"\nruntime = "managed"\n');
    await writeFile(
      join(dir, "main.mjs"),
      `const pause = (ms) => new Promise((r) => setTimeout(r, ms));
export async function run(input, ctx) {
  console.log("first");
  process.stdout.write("part");
  await pause(1500);
  process.stdout.write("ial\\n");
  console.error("second");
  // Until cancelled (at most 60 s).
  await new Promise((r) => { ctx.signal.addEventListener("abort", r); setTimeout(r, 60_000); });
  return "done";
}`,
    );
    expect((await command(["deploy", dir], runlet.env)).code).toBe(0);
    const ran = await command(["run", "ticker", "--async", "--json"], runlet.env);
    expect(ran.code).toBe(0);
    const runId = JSON.parse(ran.stdout).run_id as string;
    const following = cli(["logs", runId, "--follow"], runlet.env);
    // The run wrote its last line and is still running: then cancelled, which ends the follow.
    const logsUrl = `${runlet.local.baseUrl}/v2/projects/${runlet.local.projectId}/runs/${runId}/logs`;
    const headers = { authorization: `Bearer ${runlet.local.token}` };
    let written = "";
    for (let i = 0; i < 200 && !written.includes('"second"'); i++) {
      await new Promise((r) => setTimeout(r, 100));
      written = await (await fetch(logsUrl, { headers })).text();
    }
    expect(written).toContain('"second"');
    const notYet = await command(["status", runId, "--wait", "--timeout", "1s"], runlet.env);
    expect(notYet.code).toBe(1);
    expect(notYet.stderr).toMatch(/has not ended after 1s \(running\): it goes on/);
    expect((await command(["cancel", runId], runlet.env)).code).toBe(0);
    const cancelled = await command(["status", runId, "--wait"], runlet.env);
    expect(cancelled.code).toBe(1); // waited on, a run that did not succeed
    expect(cancelled.stdout).toMatch(/^status\s+cancelled$/m);
    // Read with its app given (no runs index): it ran past the function's 1.5 s pause until the
    // cancel, and says so (run_time_ms was null for a cancelled run).
    const viewed = await command(["status", runId, "--app", "ticker", "--json"], runlet.env);
    expect(viewed.code, viewed.stderr).toBe(0);
    expect(JSON.parse(viewed.stdout).run_time_ms).toBeGreaterThanOrEqual(1500);
    const followed = await following;
    expect(followed.code).toBe(1); // as status --wait exits: the run it followed was cancelled
    const lines = followed.stdout
      .trimEnd()
      .split("\n")
      .map((l) => l.split("  ").slice(1).join(" "));
    expect(lines).toEqual(["stdout first", "stdout partial", "stderr second"]);
    expect(followed.stderr).toContain(`(${runId} ended: cancelled)`);

    // Past a line number: only what came after it. Not a number: 400.
    const after = await json(await fetch(`${logsUrl}?after=2`, { headers }));
    expect(after.lines.map((l: { text: string }) => l.text)).toEqual(["second"]);
    expect(after.lines[0].seq).toBe(3);
    const bad = await fetch(`${logsUrl}?after=two`, { headers });
    expect(bad.status).toBe(400);
    expect((await json(bad)).message).toMatch(/after/);
    const both = await command(["logs", "--app", "ticker", "--follow"], runlet.env);
    expect([both.code, both.stderr]).toEqual([
      1,
      expect.stringMatching(/--follow follows one run/),
    ]);
  });

  it("lists the local runtime host, registered with the local host token; makes a host token once", async () => {
    const listed = await command(["hosts", "--json"], runlet.env);
    expect(listed.code).toBe(0);
    const { hosts } = JSON.parse(listed.stdout) as {
      hosts: Array<{ address: string; state: string }>;
    };
    expect(hosts).toEqual([
      expect.objectContaining({
        address: `http://127.0.0.1:${runlet.ports.host}`,
        name: "local-1",
        state: "up",
      }),
    ]);
    const table = await command(["hosts"], runlet.env);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+ADDRESS\s+STATE/);

    const made = await command(["hosts", "token", "--name", "rack 2"], runlet.env);
    expect(made.code).toBe(0);
    expect(made.stderr).toMatch(/shown only this once/);
    const token = made.stdout.trim();
    expect(token).toMatch(/^rlh_/);
    const tokens = await command(["hosts", "tokens", "--json"], runlet.env);
    expect(tokens.stdout).not.toContain(token);
    const tokenList = JSON.parse(tokens.stdout).tokens as Array<{
      name: string;
      createdByName: string;
    }>;
    expect(tokenList.map((t) => t.name)).toEqual(["local", "rack 2"]);
    // Who made it, by name (the API's createdByName), where an operator reads the list.
    const byName = tokenList[1]?.createdByName as string;
    expect(byName).toEqual(expect.any(String));
    const tokensTable = await command(["hosts", "tokens"], runlet.env);
    expect(tokensTable.stdout).toMatch(/^ID\s+NAME\s+CREATED\s+STATUS\s+CREATED BY\s+HOSTS/);
    expect(tokensTable.stdout).toMatch(
      new RegExp(`rack 2\\s+\\S+\\s+active\\s+${byName}\\s+none$`, "m"),
    );
    expect(tokensTable.stdout).toMatch(/^htk_\S+\s+local\s.*\slocal-1 \(up\)$/m);
    // A member of the project who is not an operator is told why not.
    const created = await command(
      ["tokens", "create", "--name", "sa", "--expires", "1d"],
      runlet.env,
    );
    const refused = await command(["hosts"], {
      ...runlet.env,
      RUNLET_TOKEN: created.stdout.trim(),
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/\(403\): only an operator of this Runlet/);
  });

  it("runlet host says what it needs before starting anything", async () => {
    const noUrl = await command(["host"], runlet.env);
    expect(noUrl.code).toBe(1);
    expect(noUrl.stderr).toMatch(/--control-plane must be the control plane's URL/);
    const env = { ...runlet.env, RUNLET_HOST_TOKEN: "" };
    const noToken = await command(["host", "--control-plane", runlet.local.baseUrl], env);
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toMatch(/set RUNLET_HOST_TOKEN to a host token/);
    // Beside runlet start in its own home it is refused: its start cleared the other host's
    // spare folders (RUNLET_HOME/host/slots), and that host's next cold start failed.
    const withToken = { ...runlet.env, RUNLET_HOST_TOKEN: "rlh_x" };
    const beside = await command(["host", "--control-plane", runlet.local.baseUrl], withToken);
    expect(beside.code).toBe(1);
    expect(beside.stderr).toMatch(/another runlet start \(pid \d+\) is using .*RUNLET_HOME/);
  });

  it("a revoked user's token stops on the run API once its cache expires, at once elsewhere", async () => {
    await deployHello();
    const made = await command(
      ["users", "create", "--name", "Rae", "--expires", "30d", "--json"],
      runlet.env,
    );
    expect(made.code, made.stderr).toBe(0);
    const rae = JSON.parse(made.stdout) as { id: string; token: string };
    const run = () =>
      fetch(`${runlet.local.apiUrl}/v4/${runlet.local.projectId}/hello/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${rae.token}`, "content-type": "application/json" },
        body: "{}",
      });
    // The Worker now holds the control plane's answer about this token.
    expect((await run()).status).toBe(200);
    const revoked = await command(["users", "revoke", rae.id], runlet.env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await apps(rae.token)).status).toBe(401);
    // docs/api.md: the run API asks the control plane about a token at most every 10 s (1 s on
    // this stack). Polled past that (and 5 s for a loaded machine), never longer.
    const deadline = Date.now() + 6_000;
    let res = await run();
    while (res.status === 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      res = await run();
    }
    expect(res.status).toBe(401);
    expect((await json(res)).message).toBe("token has been revoked");
  });
});

describe("a slow answer", () => {
  it("is waited for with a note on stderr, and the answer still printed", async () => {
    // A control plane that takes 3.5 s (one waiting on a runtime host that does not answer).
    const slow = createServer((_req, res) => {
      setTimeout(
        () => res.writeHead(200, { "content-type": "application/json" }).end('{"apps":[]}'),
        3_500,
      );
    });
    await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
    try {
      const env = {
        ...process.env,
        RUNLET_HOME: "/nonexistent",
        RUNLET_BASE_URL: url,
        RUNLET_API_URL: url,
        RUNLET_PROJECT: "prj_slow",
        RUNLET_TOKEN: "t",
      };
      const listed = await command(["apps", "--json"], env);
      expect(listed.code).toBe(0);
      expect(JSON.parse(listed.stdout)).toEqual({ apps: [] });
      expect(listed.stderr).toMatch(
        /listing apps: still waiting for http:\/\/127\.0\.0\.1:\d+, 3 s/,
      );
    } finally {
      slow.close();
    }
  });
});
