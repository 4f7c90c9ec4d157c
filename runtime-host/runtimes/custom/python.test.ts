// A custom app written in Python with its standard library alone (http.server), as most users of
// Modal, Replicate or Cerebrium write one, on a real host in the sandbox this machine has
// (bubblewrap where installed, as in production). Skipped, saying why, without python3.
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HEADER } from "../../../common/consts.ts";
import { hostPath } from "../../../common/protocol/paths.ts";
import { detectSandbox } from "../../sandbox/sandbox.ts";
import type { RunningHost } from "../../server.ts";
import {
  configOf,
  eventually,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
} from "../../test-support.ts";

const hasPython = spawnSync("python3", ["--version"]).status === 0;

const SERVER = `
import os, signal, sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

SERVER_ID = os.urandom(8).hex()  # tells this process from the replica's next one

def stop(signum, frame):
    print("stopping: closing what is open", file=sys.stderr)
    time.sleep(0.3)  # a graceful shutdown takes a moment
    print("stopped cleanly", file=sys.stderr)
    sys.exit(0)

signal.signal(signal.SIGTERM, stop)

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, text):
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/print":
            print("printed by", SERVER_ID)  # no flush=True, as people write it
        if self.path == "/slow":
            time.sleep(1)
        if self.path == "/boom":
            raise RuntimeError("boom in a handler")
        if self.path == "/exit":
            print("giving up", file=sys.stderr, flush=True)
            os._exit(3)
        self.answer(SERVER_ID)

ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
`;

const config = (version: number) =>
  configOf("py", {
    runtime: "custom",
    // A version's own line in the app's output tells its replicas apart.
    custom: { entrypoint: ["python3", "server.py", String(version)] },
    scaling: { max_replicas: 1, replica_concurrency: 4 },
  });

const sandbox = detectSandbox();

describe.skipIf(!hasPython)(`a Python app (stdlib http.server, ${sandbox.kind})`, () => {
  let home: string;
  let host: RunningHost;
  const send = (path: string) =>
    fetch(`${host.url}/internal/http/p/py${path}`, {
      headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: "run_py" },
    });
  const output = async () => {
    const res = await fetch(`${host.url}${hostPath.output("p", "py")}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const body = (await res.json()) as {
      replicas: Array<{ state: string; lines: Array<{ stream: string; text: string }> }>;
    };
    return body.replicas;
  };

  beforeAll(async () => {
    home = await newHome();
    host = await startTestHost(home, { sandbox });
    const deployed = await hostClient(host.url).deploy(
      "p",
      "py",
      1,
      { "server.py": SERVER },
      config(1),
    );
    expect(deployed.status).toBe(200);
  });

  afterAll(async () => {
    await host.close();
    await removeHome(home);
  });

  it("shows what print() wrote while the server runs, not only once it exits", async () => {
    const id = await (await send("/print")).text();
    const replicas = await eventually(output, ([r]) =>
      Boolean(r?.lines.some((l) => l.text === `printed by ${id}`)),
    );
    expect(replicas[0]?.state).toBe("running");
    expect(replicas[0]?.lines.find((l) => l.text.startsWith("printed by"))?.stream).toBe("stdout");
  });

  it("fails only the request whose handler raised: the server goes on serving the others", async () => {
    const id = await (await send("/")).text();
    const slow = send("/slow"); // in flight on the same server meanwhile
    await new Promise((r) => setTimeout(r, 100));
    const boom = await send("/boom");
    expect(boom.status).toBe(502);
    expect(((await boom.json()) as { message: string }).message).toMatch(
      /closed the connection without answering \(ECONNRESET\); its output \(runlet logs --app py\)/,
    );
    const answered = await slow;
    expect(answered.status).toBe(200);
    expect(await answered.text()).toBe(id);
    expect(await (await send("/")).text()).toBe(id); // not a cold start either
    const [replica] = await output();
    expect(replica?.lines.map((l) => l.text)).toContain("RuntimeError: boom in a handler");
  });

  it("says the app's process exited, with its code, when it dies mid-request", async () => {
    const id = await (await send("/")).text();
    const exited = await send("/exit");
    expect(exited.status).toBe(502);
    // Not "the app's server failed to answer (ECONNRESET)", which said neither.
    expect(((await exited.json()) as { message: string }).message).toBe(
      "the app's process exited (code 3) before it answered (ECONNRESET); its output (runlet logs --app py) may say why",
    );
    expect(await (await send("/")).text()).not.toBe(id); // the next request starts a new one
    const replicas = await output();
    expect(replicas.find((r) => r.state === "exited")?.lines.map((l) => l.text)).toContain(
      "giving up",
    );
  });

  it("gives the server SIGTERM and time to shut down before its replica is killed", async () => {
    expect((await send("/")).status).toBe(200);
    // A new version: the replica of version 1 is stopped (SIGTERM, 2 s, SIGKILL).
    const client = hostClient(host.url);
    expect((await client.deploy("p", "py", 2, { "server.py": SERVER }, config(2))).status).toBe(
      200,
    );
    expect((await send("/")).status).toBe(200);
    const replicas = await eventually(output, (all) =>
      all.some((r) => r.state === "exited" && r.lines.some((l) => l.text.startsWith("stopping"))),
    );
    const stopped = replicas.find((r) => r.state === "exited");
    expect(stopped?.lines.map((l) => l.text)).toContain("stopped cleanly");
  });
});

// An ML team's server: it loads its model before it listens. Under bubblewrap the host reaches
// the app through the sandbox's relay, which takes connections before the app listens, so the
// start failed as "does it listen on PORT?" there even once plain processes said otherwise.
const LOADING = `
import os, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
print("loading model...", flush=True)
time.sleep(60)
ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), BaseHTTPRequestHandler).serve_forever()
`;

describe.skipIf(!hasPython)(`a Python app that loads before it listens (${sandbox.kind})`, () => {
  let home: string;
  let host: RunningHost;

  beforeAll(async () => {
    home = await newHome();
    host = await startTestHost(home, { sandbox, limits: { startTimeoutMs: 3_000 } });
  });

  afterAll(async () => {
    await host.close();
    await removeHome(home);
  });

  it("says that it must answer within the start limit and how, not that PORT may be wrong", async () => {
    const loading = configOf("loading", {
      runtime: "custom",
      custom: { entrypoint: ["python3", "server.py"] },
    });
    await hostClient(host.url).deploy("p", "loading", 1, { "server.py": LOADING }, loading);
    const res = await fetch(`${host.url}/internal/http/p/loading/`, {
      headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: "run_loading" },
    });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { message: string }).message).toMatch(
      /^the app failed to start: nothing answered \/health on PORT \(\d+\) within 3 s, the app's start_timeout \(runlet\.toml\), while its process ran \(its last output: "loading model\.\.\."\): .*listen at once and load in a background thread/,
    );
  });
});
