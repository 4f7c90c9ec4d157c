// The CLI as a script sees it: one JSON document on stdout under --json, the reason on stderr
// for the job's log either way, exit 1 for every failure, and usage text where it belongs.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { dashedIdsAsWords } from "./command.ts";
import { main } from "./main.ts";

let out: ReturnType<typeof vi.spyOn>;
let err: ReturnType<typeof vi.spyOn>;
beforeEach(() => {
  out = vi.spyOn(console, "log").mockImplementation(() => {});
  err = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

const printed = (spy: ReturnType<typeof vi.spyOn>) => spy.mock.calls.map((c) => String(c[0]));

it("answers a command line that does not parse with {message} on stdout under --json, and says it on stderr", async () => {
  for (const argv of [
    ["run", "hello", "--bogus", "--json"],
    ["runs", "--json", "--limit"],
  ]) {
    out.mockClear();
    err.mockClear();
    expect(await main(argv)).toBe(1);
    expect(out).toHaveBeenCalledTimes(1);
    const body = JSON.parse(printed(out)[0] ?? "") as { message: string };
    expect(body.message).not.toContain("Usage:");
    expect(body.message).toMatch(/--bogus|--limit/);
    // The job's log says the same, in one line, without the usage text.
    expect(printed(err)).toEqual([`runlet ${argv[0]}: ${body.message}`]);
  }
});

it("names an unknown option in a few words, followed by the command's usage", async () => {
  expect(await main(["deploy", "--yes"])).toBe(1);
  expect(out).not.toHaveBeenCalled();
  const [said] = printed(err);
  expect(said).toMatch(/^runlet deploy: unknown option '--yes'\n\nUsage: runlet deploy/);
  expect(said).not.toContain("positional argument");
});

it("takes a signing key id that begins with a dash as the word it is, not as options", async () => {
  // A kid is 16 characters (common/jwt.ts keyId): this one failed a CI run as "unknown option '-H'".
  const kid = "-HkN59k1RJTFIzs1";
  expect(dashedIdsAsWords(["keys", "retire", kid, "--force"])).toEqual([
    "keys",
    "retire",
    "--force",
    "--",
    kid,
  ]);
  // A short option, a negative-looking short word, and what follows `--` stay as they are.
  expect(dashedIdsAsWords(["run", "-d", "{}", "--", "-x"])).toEqual([
    "run",
    "-d",
    "{}",
    "--",
    "-x",
  ]);
  // The value of a string option: left to it, not taken for a word.
  const key = ["run", "--idempotency-key", kid, "hello"];
  expect(dashedIdsAsWords(key, { "idempotency-key": { type: "string" } })).toEqual(key);
  // The whole command: no "unknown option '-N'", but the missing credentials it comes to.
  vi.stubEnv("RUNLET_HOME", "/nonexistent-runlet-home");
  for (const name of ["RUNLET_BASE_URL", "RUNLET_API_URL", "RUNLET_PROJECT", "RUNLET_TOKEN"])
    vi.stubEnv(name, "");
  expect(await main(["keys", "retire", kid])).toBe(1);
  expect(printed(err).join("\n")).not.toContain("unknown option");
});

it("prints the usage on stderr when no command is given, and a command's own for `help <command>`", async () => {
  expect(await main([])).toBe(1);
  expect(out).not.toHaveBeenCalled();
  expect(printed(err)[0]).toMatch(/^Usage: runlet <command>/);
  err.mockClear();
  expect(await main(["help", "deploy"])).toBe(0);
  expect(printed(out)).toEqual([expect.stringMatching(/^Usage: runlet deploy \[dir\]/)]);
  expect(err).not.toHaveBeenCalled();
  // A command it does not have is said as `runlet deplyo` says it, exit 1.
  out.mockClear();
  expect(await main(["help", "deplyo"])).toBe(1);
  expect(out).not.toHaveBeenCalled();
  expect(printed(err)[0]).toMatch(/^runlet: unknown command 'deplyo'\n\nUsage: runlet <command>/);
});

it("refuses a host's --address that is not a URL in one line, not with a stack trace", async () => {
  vi.stubEnv("RUNLET_HOST_TOKEN", "rlh_x");
  const argv = ["host", "--control-plane", "http://127.0.0.1:9", "--address", "10.0.0.5:8790"];
  expect(await main([...argv, "--json"])).toBe(1);
  const message =
    "--address must be the http(s) URL the Worker reaches this host at (got '10.0.0.5:8790')";
  expect(printed(out)).toEqual([JSON.stringify({ message })]);
  expect(printed(err)).toEqual([`runlet host: ${message}`]);
});

it("refuses a dashboard page that starts as a URL but is none, in one line", async () => {
  expect(await main(["dashboard", "https://", "--json"])).toBe(1);
  expect(printed(out)).toEqual([JSON.stringify({ message: "'https://' is not a URL" })]);
  expect(printed(err)).toEqual(["runlet dashboard: 'https://' is not a URL"]);
});

it("says where a mistyped address came from, in one line, instead of a stack trace", async () => {
  vi.stubEnv("RUNLET_BASE_URL", "runlet.example.com");
  vi.stubEnv("RUNLET_API_URL", "http://127.0.0.1:9");
  vi.stubEnv("RUNLET_PROJECT", "prj_1");
  vi.stubEnv("RUNLET_TOKEN", "t");
  expect(await main(["apps", "--json"])).toBe(1);
  const message = "RUNLET_BASE_URL is not an http(s) URL: 'runlet.example.com'";
  expect(printed(out)).toEqual([JSON.stringify({ message })]);
  expect(printed(err)).toEqual([`runlet apps: ${message}`]);
});

/** A Runlet whose every answer is 401 "token has expired", as for a CI secret that ran out. */
/** Refuses every token as expired, as the management API does, and as the run API does on a
 * run path: with the request's run id. */
async function expiredTokenServer(): Promise<Server> {
  const server = createServer((req, res) => {
    const body = { message: "token has expired", code: "unauthorized" };
    const runPath = req.url?.startsWith("/v4/");
    res
      .writeHead(401, { "content-type": "application/json" })
      .end(JSON.stringify(runPath ? { ...body, run_id: "run_01kexpired" } : body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

it("says in one line that the token was refused, and that it came from RUNLET_TOKEN", async () => {
  const server = await expiredTokenServer();
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    vi.stubEnv("RUNLET_BASE_URL", url);
    vi.stubEnv("RUNLET_API_URL", url);
    vi.stubEnv("RUNLET_PROJECT", "prj_1");
    vi.stubEnv("RUNLET_TOKEN", "an-expired-one");
    expect(await main(["deploy", "examples/hello", "--json"])).toBe(1);
    expect(JSON.parse(printed(out)[0] ?? "")).toEqual({
      message: "deploy failed (401): token has expired",
      status: 401,
      code: "unauthorized",
    });
    expect(printed(err)).toEqual([
      "runlet deploy: deploy failed (401): token has expired (token from RUNLET_TOKEN)",
    ]);
    out.mockClear();
    err.mockClear();
    expect(await main(["run", "hello", "--json"])).toBe(1);
    expect(JSON.parse(printed(out)[0] ?? "")).toMatchObject({ status: 401 });
    expect(printed(err)).toEqual([
      "runlet run: run failed (401): token has expired (token from RUNLET_TOKEN)",
    ]);
  } finally {
    server.close();
  }
});

it("refuses an option or a word its subcommand does not take, before calling anyone", async () => {
  vi.stubEnv("RUNLET_HOME", "/nonexistent/runlet-home");
  for (const [argv, said] of [
    [["tokens", "list", "--name", "ci"], "tokens list takes no --name"],
    [["tokens", "revoke", "sa_1", "sa_2"], "unexpected 'sa_2' after tokens revoke"],
    [["secrets", "get", "DB_URL", "API_KEY"], "unexpected 'API_KEY' after secrets get"],
    [["hosts", "tokens", "--force"], "hosts tokens takes no --force"],
    [["users", "list", "--role", "owner"], "users list takes no --role"],
    [["keys", "retire", "k1", "k2"], "unexpected 'k2' after keys retire"],
    [["keys", "rotate", "--force"], "keys rotate takes no --force"],
    [["runs", "--app", "a", "b"], "unexpected 'b' after runs"],
    [["audit-log", "extra"], "unexpected 'extra' after audit-log"],
  ] as const) {
    out.mockClear();
    err.mockClear();
    expect(await main([...argv, "--json"])).toBe(1);
    expect(printed(out)).toEqual([JSON.stringify({ message: said })]);
    expect(printed(err)).toEqual([`runlet ${argv[0]}: ${said}`]);
  }
});

it("answers --help on every command and subcommand with its usage on stdout, exit 0", async () => {
  // Every command the top-level usage lists, so that a new one is covered as it is added.
  expect(await main(["--help"])).toBe(0);
  const listed = printed(out).join("\n").split("Commands:\n")[1]?.split("\n\n")[0] ?? "";
  const commands = listed.split("\n").map((line) => line.trim().split(/\s+/)[0] as string);
  expect(commands).toEqual(expect.arrayContaining(["start", "deploy", "keys", "backup"]));
  const subcommands = [
    ["tokens", "create"],
    ["secrets", "set"],
    ["users", "token"],
    ["hosts", "revoke"],
  ];
  for (const argv of [...commands.map((c) => [c]), ...subcommands]) {
    out.mockClear();
    expect(await main([...argv, "--help"])).toBe(0);
    expect(printed(out)).toEqual([expect.stringMatching(new RegExp(`^Usage: runlet ${argv[0]}`))]);
  }
  expect(err).not.toHaveBeenCalled();
});

it("says a proxy's HTML error page in one line, not as the page's many lines", async () => {
  const page =
    "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<h1>502</h1>\n</body>\n</html>\n";
  const server = createServer((_req, res) =>
    res.writeHead(502, { "content-type": "text/html" }).end(page),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (const [name, value] of Object.entries({
      BASE_URL: url,
      API_URL: url,
      PROJECT: "prj_1",
      TOKEN: "t",
    }))
      vi.stubEnv(`RUNLET_${name}`, value);
    expect(await main(["apps"])).toBe(1);
    expect(printed(err)).toEqual([
      "runlet apps: listing apps failed (502): <html> <head><title>502 Bad Gateway</title></head> <body> <h1>502</h1> </body> </html>",
    ]);
  } finally {
    server.close();
  }
});

it("takes --json before the command as after it", async () => {
  expect(await main(["--json", "deploy", "--bogus"])).toBe(1);
  expect(JSON.parse(printed(out)[0] ?? "")).toMatchObject({
    message: expect.stringMatching(/--bogus/),
  });
});

it("prints its version for --version and -v, as JSON with --json, and --help names it", async () => {
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  for (const argv of [["--version"], ["-v"]]) {
    out.mockClear();
    expect(await main(argv)).toBe(0);
    expect(printed(out)).toEqual([`runlet ${version}`]);
  }
  for (const argv of [
    ["--version", "--json"],
    ["--json", "-v"],
  ]) {
    out.mockClear();
    expect(await main(argv)).toBe(0);
    expect(printed(out).map((line) => JSON.parse(line))).toEqual([{ version }]);
  }
  out.mockClear();
  expect(await main(["--help"])).toBe(0);
  expect(printed(out).join("\n")).toContain("--version");
});

it("says its version compiled (bin/compiled.mjs) and from source (RUNLET_FROM_SOURCE=1)", () => {
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  const bin = fileURLToPath(new URL("../bin/runlet.mjs", import.meta.url));
  for (const fromSource of ["0", "1"]) {
    const done = spawnSync(process.execPath, [bin, "--version"], {
      env: { ...process.env, RUNLET_FROM_SOURCE: fromSource },
      encoding: "utf8",
    });
    expect({ code: done.status, out: done.stdout }).toEqual({
      code: 0,
      out: `runlet ${version}\n`,
    });
  }
}, 30_000);

it("says an option without its value in one line, when another option follows it too", async () => {
  // `runlet runs --app $APP --json` with APP empty read in three lines, in --json's message and
  // on stderr: "Option '--app' argument is ambiguous.\nDid you forget to specify …".
  expect(await main(["runs", "--app", "--json"])).toBe(1);
  const message =
    "--app needs a value, and the word after it starts with a dash (a value that does is written --app=-value)";
  expect(printed(out)).toEqual([JSON.stringify({ message })]);
  expect(printed(err)).toEqual([`runlet runs: ${message}`]);
  out.mockClear();
  err.mockClear();
  expect(await main(["run", "hello", "-d", "--json"])).toBe(1);
  expect(printed(out)).toEqual([
    JSON.stringify({
      message:
        "-d needs a value, and the word after it starts with a dash (a value that does is written --data=-value)",
    }),
  ]);
  out.mockClear();
  err.mockClear();
  expect(await main(["runs", "--json", "--app"])).toBe(1);
  expect(printed(out)).toEqual([JSON.stringify({ message: "--app needs a value" })]);
});
