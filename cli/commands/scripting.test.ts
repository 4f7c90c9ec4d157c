// The CLI as a CI job drives it, against a real Node control plane: data alone on stdout (notes
// and progress on stderr, no terminal codes), and a refused token said in one line with where
// it came from.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { newId } from "../../common/ids.ts";
import { runlet as cli, type FirstUser, withFirstUser } from "./test-support.ts";

let first: FirstUser;
const runlet = (args: string[], more: Record<string, string | undefined> = {}) =>
  cli(args, { ...first.env, ...more });

beforeAll(async () => {
  first = await withFirstUser("scripting", "first");
});

afterAll(() => first?.stop());

describe("the CLI in a script", () => {
  it("prints nothing on stdout for an empty list: the note that says so goes to stderr", async () => {
    for (const [args, note] of [
      [["apps"], "No apps yet"],
      [["runs"], "No runs match."],
      [["secrets", "list"], "No secrets."],
      [["tokens", "list"], "No service accounts yet"],
      // A control plane made with `runlet init` has no host token (`local` is runlet start's).
      [["hosts", "tokens"], "No host tokens yet"],
    ] as const) {
      const listed = await runlet([...args]);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toBe("");
      expect(listed.stderr).toContain(note);
    }
  });

  it("lists no projects as a note on stderr, not a table's header alone on stdout", async () => {
    // A user an operator made, then removed from the one project they were in.
    const made = await runlet(["users", "create", "--name", "Nobody", "--expires", "1d", "--json"]);
    expect(made.code, made.stdout).toBe(0);
    const { id, token } = JSON.parse(made.stdout);
    const removed = await runlet(["users", "remove", id]);
    expect(removed.code, removed.stderr).toBe(0);
    const listed = await runlet(["projects"], { [ENV.token]: token });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toBe("");
    expect(listed.stderr).toMatch(/^You are in no project: make one/);
    const json = await runlet(["projects", "--json"], { [ENV.token]: token });
    expect(JSON.parse(json.stdout)).toEqual({ projects: [] });
  });

  it("deploys with the outcome alone on stdout, and deletes with {name, deleted} as every delete", async () => {
    // No runtime host beside this control plane: nothing to start a replica on first.
    const deployed = await runlet(["deploy", "examples/hello", "--no-start-check"]);
    expect(deployed.code, deployed.stderr).toBe(0);
    expect(deployed.stdout).toMatch(/^Deployed hello v1 \(managed runtime\) in \d+ ms$/);
    expect(deployed.stderr).toContain("Call it: npx runlet run hello");
    const deleted = await runlet(["apps", "delete", "hello", "--json"]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(JSON.parse(deleted.stdout)).toEqual({ name: "hello", deleted: true });
  });

  it("says a mutating command's outcome in one line on stdout, and what to do next on stderr", async () => {
    // runlet init, which made the first user: it said so in two lines.
    expect(first.init.stdout).toMatch(
      /^Ada \(usr_\w+\) is this Runlet's first user and an operator, owner of project default \(prj_\w+\); credentials in \S+local\.json, the token expires \S+\.$/,
    );
    expect(first.init.stderr).toMatch(/^The bootstrap token takes no other user now\./m);
    const stored = await runlet(["secrets", "set", "OUTCOME", "x"]);
    // What happens next, on stderr: a replica's environment is set as it starts, so the running
    // ones are replaced, and an app called at once may still read the old value, or none.
    expect([stored.code, stored.stdout, stored.stderr]).toEqual([
      0,
      "Stored OUTCOME.",
      "The project's apps' running replicas that read another value are being replaced: calls made from now on get OUTCOME as it is now (no redeploy needed; a runtime host that could not be told at once hears it within 2 s). Calls running now finish with the value before (or none).",
    ]);
    const deleted = await runlet(["secrets", "delete", "OUTCOME"]);
    expect([deleted.code, deleted.stdout]).toEqual([0, "Deleted OUTCOME."]);
    // It said "calls made from now on get OUTCOME as it is now" of a secret deleted.
    expect(deleted.stderr).toBe(
      "The project's apps' running replicas are being replaced: calls made from now on do not have OUTCOME (no redeploy needed; a runtime host that could not be told at once hears it within 2 s). Calls running now finish with it still set.",
    );
    const rotated = await runlet(["keys", "rotate"]);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toMatch(/^Tokens are signed with \S+ from now on\.$/);
    expect(rotated.stderr).toMatch(/still verifies the tokens it signed/);
  });

  it("says where the names are for a secret or a project not found", async () => {
    // Each said only "… not found": the list that has the names was left to be found.
    for (const action of ["get", "delete"]) {
      const missing = await runlet(["secrets", action, "NOPE"]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toBe(
        `runlet secrets: ${action === "get" ? "reading" : "deleting"} NOPE failed (404): secret 'NOPE' not found (runlet secrets list shows the names)`,
      );
    }
    const project = newId("prj");
    const unknown = await runlet(["secrets", "list"], { [ENV.project]: project });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(
      `runlet secrets: listing secrets failed (404): project '${project}' not found: GET /v2/projects (runlet projects) lists yours with their ids`,
    );
  });

  it("keeps a page's table alone on stdout, and counts the pages of --all in lines of their own", async () => {
    // Twelve entries and more: one per secret written.
    for (let i = 0; i < 12; i++)
      expect((await runlet(["secrets", "set", `S${i}`, "x"])).code).toBe(0);
    const page = await runlet(["audit-log", "--limit", "1"]);
    expect(page.stdout.split("\n")).toEqual([
      expect.stringMatching(/^TIME\s+ACTION/),
      expect.stringMatching(/secrets\.write\s+success/),
    ]);
    expect(page.stderr).toMatch(/^This plan keeps 7 days of audit log\. More entries: --all/);
    const all = await runlet(["audit-log", "--all", "--limit", "1", "--json"]);
    const { logs } = JSON.parse(all.stdout) as { logs: unknown[] };
    expect(logs.length).toBeGreaterThanOrEqual(12);
    // Not a terminal: no carriage returns rewriting a line of a CI log.
    expect(all.progress).not.toContain("\r");
    expect(all.progress).toMatch(new RegExp(`^10 so far…\\n(.*\\n)*${logs.length} in all\\.\\n$`));
  });

  it("says a revoked service-account token was refused, in one line naming RUNLET_TOKEN", async () => {
    const made = await runlet(["tokens", "create", "--name", "ci", "--expires", "1d"]);
    // The token alone on stdout; on stderr, the variables a job sets beside it.
    const token = made.stdout;
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const local = JSON.parse(
      await readFile(join(first.env[ENV.home] as string, "local.json"), "utf8"),
    );
    expect(made.stderr).toContain(
      `RUNLET_BASE_URL=${local.baseUrl} RUNLET_API_URL=${local.apiUrl} and RUNLET_TOKEN set to it`,
    );
    // Those three alone, as a CI job has them: no local.json, no RUNLET_PROJECT.
    const ci = {
      [ENV.home]: join(first.dir, "ci-job"),
      [ENV.baseUrl]: local.baseUrl,
      [ENV.apiUrl]: local.apiUrl,
      [ENV.token]: token,
    };
    const asJob = await cli(["apps", "--json"], ci);
    expect(asJob.code, asJob.stderr).toBe(0);
    expect(JSON.parse(asJob.stdout)).toMatchObject({ apps: [] });
    const elsewhere = await cli(["apps", "--json"], { ...ci, [ENV.project]: "prj_other" });
    expect(elsewhere.code).toBe(1);
    expect(JSON.parse(elsewhere.stdout).message).toMatch(
      new RegExp(
        `^RUNLET_PROJECT is prj_other, but the token is a service account's of project ${local.projectId} `,
      ),
    );
    const listed = await runlet(["tokens", "list", "--json"]);
    const { serviceAccounts } = JSON.parse(listed.stdout) as { serviceAccounts: { id: string }[] };
    const account = { id: serviceAccounts[0]?.id as string, token };
    const revoked = await runlet(["tokens", "revoke", account.id]);
    // It said "its token no longer works", but the run API takes it for up to 10 s more.
    expect([revoked.code, revoked.stdout]).toEqual([
      0,
      `Revoked ${account.id}: its token is refused at once on the management API, within 10 s on the run API.`,
    ]);
    const asCi = { [ENV.token]: account.token };
    for (const args of [["deploy", "examples/hello"], ["logs", "run_1"], ["runs"]]) {
      const refused = await runlet([...args, "--json"], asCi);
      expect(refused.code).toBe(1);
      expect(JSON.parse(refused.stdout)).toMatchObject({ status: 401, code: "unauthorized" });
      expect(refused.stderr).toMatch(
        new RegExp(
          `^runlet ${args[0]}: .* failed \\(401\\): token has been revoked \\(token from RUNLET_TOKEN\\)$`,
        ),
      );
    }
  });

  it("refuses a second live service account or host token of a name, naming the first and what to do", async () => {
    const made = await runlet([
      "tokens",
      "create",
      "--name",
      "nightly",
      "--expires",
      "1d",
      "--json",
    ]);
    const { id } = JSON.parse(made.stdout) as { id: string };
    const again = await runlet(["tokens", "create", "--name", "nightly", "--expires", "1d"]);
    expect([again.code, again.stdout]).toEqual([1, ""]);
    expect(again.stderr).toBe(
      `runlet tokens: creating the token failed (409): a service account named 'nightly' is active in this project already (${id}): revoke it first (runlet tokens revoke ${id}, or the dashboard's API keys page), or pick another name`,
    );
    const host = await runlet(["hosts", "token", "--name", "rack-n", "--json"]);
    const { id: hostTokenId } = JSON.parse(host.stdout) as { id: string };
    const twice = await runlet(["hosts", "token", "--name", "rack-n", "--json"]);
    expect(twice.code).toBe(1);
    expect(JSON.parse(twice.stdout)).toEqual({
      message: `creating a host token failed (409): a host token named 'rack-n' is live already (${hostTokenId}): revoke it first (runlet hosts revoke ${hostTokenId}, or the dashboard's Join tokens tab, under Hosts), or pick another name`,
      status: 409,
      code: "conflict",
    });
  });

  it("says an --app of runs that names no app and no kept run is not found; an app's empty list stays a note", async () => {
    const dir = join(first.dir, "quiet");
    await mkdir(dir);
    await writeFile(join(dir, "runlet.toml"), 'name = "quiet"\n');
    await writeFile(join(dir, "main.mjs"), "export const run = () => 1;\n");
    expect((await runlet(["deploy", dir, "--no-start-check"])).code).toBe(0);
    const none = await runlet(["runs", "--app", "quiet"]);
    expect([none.code, none.stdout, none.stderr]).toEqual([0, "", "No runs match."]);

    // A mistyped name said "No runs match." and exited 0.
    const { projectId } = JSON.parse(
      await readFile(join(first.env[ENV.home] as string, "local.json"), "utf8"),
    );
    const typo = await runlet(["runs", "--app", "quite"]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toBe(
      `runlet runs: app 'quite' is not deployed in project '${projectId}' (did you mean 'quiet'?), and no run of it is kept (runlet apps lists the project's apps)`,
    );
    const json = await runlet(["runs", "--app", "quite", "--status", "failure", "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 404, code: "not_found" });

    // Deleted, its runs are still listed by its name, and an empty filter of them is a note.
    const run = {
      id: newId("run"),
      projectId,
      app: "quiet",
      function: "run",
      async: false,
      status: "success",
      createdAt: Date.now(),
      finishedAt: Date.now(),
      runTimeMs: 1,
    };
    const reported = await fetch(`${first.baseUrl}/internal/runs`, {
      method: "POST",
      headers: {
        authorization: "Bearer internal-token-for-the-scripting-test-0123456789",
        "content-type": "application/json",
      },
      body: JSON.stringify({ runs: [run] }),
    });
    expect(reported.status).toBe(200);
    expect((await runlet(["apps", "delete", "quiet"])).code).toBe(0);
    const kept = await runlet(["runs", "--app", "quiet", "--json"]);
    expect(kept.code, kept.stderr).toBe(0);
    expect(JSON.parse(kept.stdout).runs).toMatchObject([{ id: run.id, app: "quiet" }]);
    const filtered = await runlet(["runs", "--app", "quiet", "--status", "failure"]);
    expect([filtered.code, filtered.stderr]).toEqual([0, "No runs match."]);
  });

  it("says a refusal alone: no progress line before a rollback to a version the app has not, or a retire of no key", async () => {
    for (let i = 0; i < 2; i++)
      expect((await runlet(["deploy", "examples/hello", "--no-start-check"])).code).toBe(0);
    // "Rolling hello back to version 99's code…" and "Starting a replica…" came before the 404.
    const missing = await runlet(["apps", "rollback", "hello", "--to", "99"]);
    expect([missing.code, missing.stdout, missing.stderr]).toEqual([
      1,
      "",
      "runlet apps: rollback failed (404): app 'hello' has no version 99 (its versions are 1 to 2)",
    ]);
    const live = await runlet(["apps", "rollback", "hello", "--to", "2"]);
    expect([live.code, live.stderr]).toEqual([
      1,
      "runlet apps: rollback failed (409): version 2 of 'hello' is already live: nothing was deployed",
    ]);
    // A version it can roll back to is said to be under way, as before.
    const rolled = await runlet(["apps", "rollback", "hello", "--to", "1", "--no-start-check"]);
    expect(rolled.code, rolled.stderr).toBe(0);
    expect(rolled.stderr).toMatch(/^Rolling hello back to version 1's code \(project prj_\w+\)…$/m);
    expect((await runlet(["apps", "delete", "hello"])).code).toBe(0);

    // "Retiring bogus at http://…" came before the 404.
    const retired = await runlet(["keys", "retire", "bogus"]);
    expect([retired.code, retired.stdout, retired.stderr]).toEqual([
      1,
      "",
      "runlet keys: retiring the key failed (404): no signing key 'bogus'",
    ]);
  });
});
