// A person at a terminal is asked before `runlet apps delete`, `tokens revoke`, `cancel` and
// `projects delete` destroy anything, against a real Node control plane: the real `runlet` in a
// pseudo-terminal (util-linux `script`). Scripts are not asked: scripting.test.ts deletes and revokes without.
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { newId } from "../../common/ids.ts";
import { runlet as cli, type FirstUser, withFirstUser } from "./test-support.ts";

let first: FirstUser;
const runlet = (args: string[]) => cli(args, first.env);

beforeAll(async () => {
  first = await withFirstUser("ask-first", "first");
});

afterAll(() => first?.stop());

const BIN = fileURLToPath(new URL("../../bin/runlet.mjs", import.meta.url));
const quoted = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * `runlet <args>` in a pseudo-terminal, `answer` typed once it asks (or at once, if it asks
 * nothing); what the terminal showed and the exit code.
 */
async function atTerminal(args: string[], answer: string, more: Record<string, string> = {}) {
  const command = [process.execPath, BIN, ...args].map(quoted).join(" ");
  const env = Object.fromEntries(
    Object.entries({ ...process.env, ...first.env, ...more }).filter(([, v]) => v !== undefined),
  );
  const child = spawn("script", ["-qec", command, "/dev/null"], { env });
  let shown = "";
  let typed = false;
  child.stdout.on("data", (chunk) => {
    shown += chunk;
    // A question, or `secrets set`'s request for a value (Ctrl-D ends it: \x04 in `answer`).
    if (!typed && (shown.includes("[y/N]") || shown.includes("then Ctrl-D"))) {
      typed = true;
      child.stdin.write(answer);
    }
  });
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { shown: shown.replaceAll("\r", ""), code };
}

const appNames = async () =>
  (JSON.parse((await runlet(["apps", "--json"])).stdout) as { apps: Array<{ name: string }> }).apps
    .map((a) => a.name)
    .sort();

it("asks before deleting an app, naming its versions and runs; no keeps it, y deletes it", async () => {
  for (let i = 0; i < 2; i++)
    expect((await runlet(["deploy", "examples/hello", "--no-start-check"])).code).toBe(0);
  const kept = await atTerminal(["apps", "delete", "hello"], "n\n");
  expect(kept.shown).toContain(
    "Delete app hello (v2 live, 2 versions, with their files and deployment records)? Its replicas stop and calls of it are 404 within 10 s. Its async runs now: 0 queued, which fail as they come to a host; 0 running, which finish first. Its runs stay listed. This cannot be undone. [y/N] n",
  );
  expect(kept.shown).toContain(
    "runlet apps: Kept hello: nothing was deleted (you did not answer y; --yes answers for you)",
  );
  expect(kept.code).toBe(1);
  expect(await appNames()).toEqual(["hello"]);
  // Enter alone is No.
  expect((await atTerminal(["apps", "delete", "hello"], "\n")).code).toBe(1);
  expect(await appNames()).toEqual(["hello"]);
  const gone = await atTerminal(["apps", "delete", "hello"], "y\n");
  expect(gone.shown).toContain("Deleted hello.");
  expect(gone.code).toBe(0);
  expect(await appNames()).toEqual([]);
});

it("asks nothing with --yes (-y), at a terminal too", async () => {
  expect((await runlet(["deploy", "examples/hello", "--no-start-check"])).code).toBe(0);
  const gone = await atTerminal(["apps", "delete", "hello", "-y"], "");
  expect(gone.shown).not.toContain("[y/N]");
  expect(gone.shown).toContain("Deleted hello.");
  expect(await appNames()).toEqual([]);
});

it("asks before revoking a service account's token, naming the account", async () => {
  const made = await runlet([
    "tokens",
    "create",
    "--name",
    "ci-staging",
    "--expires",
    "1d",
    "--json",
  ]);
  const { id } = JSON.parse(made.stdout) as { id: string };
  const kept = await atTerminal(["tokens", "revoke", id], "n\n");
  expect(kept.shown).toContain(
    `Revoke service account ci-staging (${id}, member)? Its token stops working, for good: scripts and CI jobs that use it are refused. [y/N]`,
  );
  expect(kept.code).toBe(1);
  const listed = await runlet(["tokens", "list", "--json"]);
  const account = (
    JSON.parse(listed.stdout) as { serviceAccounts: Array<{ id: string; revokedAt: null }> }
  ).serviceAccounts.find((a) => a.id === id);
  expect(account?.revokedAt).toBeNull();
  expect((await atTerminal(["tokens", "revoke", id], "yes\n")).code).toBe(0);
  // An id of no account is said at once: it was asked of, and refused (404) only after a yes.
  const typo = `${id.slice(0, -1)}${id.endsWith("x") ? "y" : "x"}`;
  const unknown = await atTerminal(["tokens", "revoke", typo], "y\n");
  expect(unknown.shown).not.toContain("[y/N]");
  expect(unknown.shown).toContain(
    `runlet tokens: service account '${typo}' not found in this project (runlet tokens list shows its accounts)`,
  );
  expect(unknown.code).toBe(1);
});

/** Runs in the control plane's runs index, as the Worker and the hosts report them. */
async function indexed(runs: Array<{ async: boolean; status: string }>): Promise<string[]> {
  const { projectId } = JSON.parse(
    await readFile(join(first.env[ENV.home] as string, "local.json"), "utf8"),
  ) as { projectId: string };
  const rows = runs.map((run) => ({
    id: newId("run"),
    projectId,
    app: "hello",
    function: "run",
    createdAt: Date.now(),
    ...run,
    ...(run.status === "success" ? { finishedAt: Date.now(), runTimeMs: 1 } : {}),
  }));
  const reported = await fetch(`${first.baseUrl}/internal/runs`, {
    method: "POST",
    headers: {
      authorization: "Bearer internal-token-for-the-ask-first-test-0123456789",
      "content-type": "application/json",
    },
    body: JSON.stringify({ runs: rows }),
  });
  expect(reported.status).toBe(200);
  return rows.map((row) => row.id);
}

it("asks before cancelling a run, or an app's whole queue: no cancels nothing", async () => {
  const [running, sync, ended] = await indexed([
    { async: true, status: "running" },
    { async: false, status: "running" },
    { async: true, status: "success" },
  ]);
  const one = await atTerminal(["cancel", `${running}`], "n\n");
  expect(one.shown).toContain(
    `Cancel run ${running} of hello (run, running)? It ends cancelled for good: a queued run never starts, a running one's ctx.signal aborts; no webhook is delivered. [y/N] n`,
  );
  expect(one.shown).toContain(
    `runlet cancel: Kept ${running}: nothing was cancelled (you did not answer y; --yes answers for you)`,
  );
  expect(one.code).toBe(1);
  // Refused before a question: it asked, and only after a yes said the run could not be cancelled.
  for (const [id, refusal] of [
    [sync, "runlet cancel: only async runs can be cancelled"],
    [ended, `runlet cancel: run '${ended}' has already ended: success`],
    [
      "run_01m8ed3smh94gn7z58c8bk4be3",
      "runlet cancel: looking up run_01m8ed3smh94gn7z58c8bk4be3 failed (404)",
    ],
  ] as const) {
    const refused = await atTerminal(["cancel", `${id}`], "y\n");
    expect(refused.shown).not.toContain("[y/N]");
    expect(refused.shown).toContain(refusal);
    expect(refused.code).toBe(1);
  }
  expect((await runlet(["deploy", "examples/hello", "--no-start-check"])).code).toBe(0);
  // Nothing queued: said, not asked about (it asked "Cancel the 0 queued runs of hello?").
  const queue = await atTerminal(["cancel", "--app", "hello", "--queued"], "\n");
  expect(queue.shown).not.toContain("[y/N]");
  expect(queue.shown).toContain("Nothing is queued for hello: nothing to cancel.");
  expect(queue.code).toBe(0);
  await indexed([{ async: true, status: "queued" }]);
  const asked = await atTerminal(["cancel", "--app", "hello", "--queued"], "\n");
  expect(asked.shown).toContain(
    "Cancel the 1 queued run of hello? Each ends cancelled and never starts; no webhook is delivered. Runs already running are left alone. [y/N]",
  );
  expect(asked.shown).toContain("runlet cancel: Kept hello's queue: nothing was cancelled");
  expect(asked.code).toBe(1);
});

it("refuses a secret's name before asking for its value (set X=1), and a delete of no secret before asking", async () => {
  // It asked for the value to be typed (or piped), and refused the name only once it had it.
  const set = await atTerminal(["secrets", "set", "API_KEY=hunter2"], "typed\n\x04");
  expect(set.shown).not.toContain("Ctrl-D");
  expect(set.shown).toContain(
    'runlet secrets: "API_KEY=…" is not a secret\'s name: give the name and the value apart, runlet secrets set API_KEY VALUE (or leave VALUE out to read it from standard input); nothing was stored',
  );
  expect(set.shown).not.toContain("hunter2");
  expect(set.code).toBe(1);
  const path = await atTerminal(["secrets", "set", "PATH"], "typed\n\x04");
  expect(path.shown).not.toContain("Ctrl-D");
  expect(path.shown).toContain(
    "runlet secrets: PATH is the runtime host's own variable in every replica: a secret of that name would never reach an app (the host's value wins). Choose another name",
  );
  expect(path.code).toBe(1);
  const deleted = await runlet(["secrets", "delete", "my-key", "--yes"]);
  expect(deleted).toMatchObject({ code: 1, stdout: "" });
  expect(deleted.stderr).toBe(
    'runlet secrets: "my-key" is not a secret\'s name: it must be 1 to 128 letters, digits or underscores, not starting with a digit',
  );
  expect((await runlet(["secrets", "list", "--json"])).stdout).toContain('"secrets":[]');
  // A name of no secret is said at once: it was asked of, and 404 only after a yes.
  const unknown = await atTerminal(["secrets", "delete", "NO_SUCH"], "y\n");
  expect(unknown.shown).not.toContain("[y/N]");
  expect(unknown.shown).toContain(
    "runlet secrets: secret 'NO_SUCH' not found (runlet secrets list shows the names)",
  );
  expect(unknown.code).toBe(1);
  expect((await runlet(["secrets", "set", "KNOWN", "v"])).code).toBe(0);
  const known = await atTerminal(["secrets", "delete", "KNOWN"], "y\n");
  expect(known.shown).toContain(
    "Delete secret KNOWN? Its value is gone for good; replicas started from now on do not have it. [y/N] y",
  );
  expect(known.shown).toContain("Deleted KNOWN.");
});

it("reads a secret typed at a terminal without showing it, Backspace taking back a character", async () => {
  // It was echoed as typed, on the screen and in the scrollback; the dashboard's field masks it.
  const set = await atTerminal(["secrets", "set", "TYPED"], "s3cret-typedd\x7f\n\x04");
  expect(set.code, set.shown).toBe(0);
  expect(set.shown).toContain("(it is not shown as you type), then Ctrl-D:");
  expect(set.shown).toContain("Stored TYPED.");
  expect(set.shown).not.toContain("s3cret");
  expect((await runlet(["secrets", "get", "TYPED"])).stdout).toBe("s3cret-typed");
  // Lines pasted (\r in raw mode, or \r\n) keep their breaks as \n, as a piped PEM file's.
  expect((await atTerminal(["secrets", "set", "PEM"], "a\rb\r\nc\r\x04")).code).toBe(0);
  expect((await runlet(["secrets", "get", "PEM"])).stdout).toBe("a\nb\nc");
  const stopped = await atTerminal(["secrets", "set", "STOPPED"], "half\x03");
  expect(stopped.shown).toContain("interrupted (Ctrl-C): nothing was stored");
  expect(stopped.code).toBe(1);
  expect((await runlet(["secrets", "list", "--json"])).stdout).not.toContain("STOPPED");
});

it("says a host token id of no token at once, before asking to revoke it", async () => {
  const unknown = await atTerminal(["hosts", "revoke", "htk_01m8eeq2w2b59dy9an0w9a451x"], "y\n");
  expect(unknown.shown).not.toContain("[y/N]");
  expect(unknown.shown).toContain(
    "runlet hosts: host token 'htk_01m8eeq2w2b59dy9an0w9a451x' not found (runlet hosts tokens lists them)",
  );
  expect(unknown.code).toBe(1);
});

it("says a kid of no signing key at once, before asking to retire it", async () => {
  const unknown = await atTerminal(["keys", "retire", "bogus"], "y\n");
  expect(unknown.shown).not.toContain("[y/N]");
  expect(unknown.shown).toContain("runlet keys: no signing key 'bogus' (runlet keys lists them)");
  expect(unknown.code).toBe(1);
});

it("says the signing key cannot be retired at once, before asking", async () => {
  const { keys } = JSON.parse((await runlet(["keys", "--json"])).stdout) as {
    keys: Array<{ kid: string; state: string }>;
  };
  const signing = keys.find((k) => k.state === "signing")?.kid as string;
  const asked = await atTerminal(["keys", "retire", signing], "y\n");
  expect(asked.shown).not.toContain("[y/N]");
  expect(asked.shown).toContain(
    `runlet keys: ${signing} is the key tokens are signed with now: rotate first (runlet keys rotate), then retire it`,
  );
  expect(asked.code).toBe(1);
});

it("asks before deleting a project, naming it; no keeps it, y deletes it", async () => {
  const made = await runlet(["projects", "create", "--name", "throwaway", "--json"]);
  expect(made.code, made.stderr).toBe(0);
  const id = (JSON.parse(made.stdout) as { id: string }).id;
  const projectIds = async () =>
    (
      JSON.parse((await runlet(["projects", "--json"])).stdout) as {
        projects: Array<{ id: string }>;
      }
    ).projects.map((p) => p.id);
  const kept = await atTerminal(["projects", "delete", id], "n\n");
  expect(kept.shown).toContain(
    `Delete project throwaway (${id})? Its service accounts are revoked, its secrets and members removed, and its audit log can no longer be read (export it first: runlet audit-log --export ndjson). This cannot be undone. [y/N] n`,
  );
  expect(kept.shown).toContain(`Kept project throwaway (${id}): nothing was deleted`);
  expect(kept.code).toBe(1);
  expect(await projectIds()).toContain(id);
  const gone = await atTerminal(["projects", "delete", id], "y\n");
  expect(gone.shown).toContain(`Deleted project throwaway (${id}).`);
  expect(gone.code).toBe(0);
  expect(await projectIds()).not.toContain(id);

  // A member is not asked a question whose answer changes nothing: the server refuses.
  const made2 = await runlet(["projects", "create", "--name", "kept", "--json"]);
  const kept2 = (JSON.parse(made2.stdout) as { id: string }).id;
  const there = { ...first.env, RUNLET_PROJECT: kept2 };
  const user = await cli(["users", "create", "--name", "Mo", "--expires", "1d", "--json"], there);
  expect(user.code, user.stderr).toBe(0);
  const token = (JSON.parse(user.stdout) as { token: string }).token;
  const member = await atTerminal(["projects", "delete", kept2], "y\n", {
    RUNLET_TOKEN: token,
    RUNLET_PROJECT: kept2,
  });
  expect(member.shown).not.toContain("[y/N]");
  expect(member.shown).toContain(
    "deleting the project failed (403): only the project owner may do this",
  );
  expect(member.code).toBe(1);
  expect(await projectIds()).toContain(kept2);
});
