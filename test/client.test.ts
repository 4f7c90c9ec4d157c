import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { createClient, type RunletClient } from "runlet/client";
import { verifyWebhook } from "runlet/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failure } from "../client/test-support.ts";
import { newId } from "../common/ids.ts";
import { client as appsOf, sleeper } from "./apps.ts";
import { cli, ROOT, type Runlet } from "./harness.ts";
import { type Receiver, startReceiver } from "./receiver.ts";
import { sharedRunlet } from "./shared-stack.ts";

// `runlet/client` — imported by the package's own name, as a user's code does — against a real
// Runlet (`runlet start`) and a real webhook receiver on loopback; `runlet redeliver` too.
// client/client.test.ts reaches the answers a real stack gives rarely.

const SECRET = "whsec_client_test_0123456789";

describe("runlet/client against a real Runlet", () => {
  let runlet: Runlet;
  let receiver: Receiver;
  let api: RunletClient;

  beforeAll(async () => {
    [runlet, receiver] = await Promise.all([sharedRunlet("client"), startReceiver()]);
    const { apiUrl, projectId, token } = runlet.local;
    api = createClient({ apiUrl, project: projectId, token });
    const deployed = await cli(["deploy", "examples/hello"], runlet.env);
    expect(deployed.code, deployed.stderr).toBe(0);
    // One replica, one call at a time: a second async run waits in the queue behind the first.
    await appsOf(runlet).deploy(
      sleeper(['name = "napper"', 'runtime = "managed"', "[scaling]", "max_replicas = 1"], 50),
    );
  });

  /** The run once its webhook delivery has ended delivered (bounded). */
  async function delivered(app: string, runId: string) {
    for (let i = 0; i < 100; i++) {
      const view = await api.status(app, runId);
      if (view.webhook?.state === "delivered") return view;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`run ${runId}: its webhook was not delivered within 5 s`);
  }

  afterAll(async () => {
    await runlet?.stop();
    await receiver?.close();
  });

  it("runs a function and answers its result, run id and status", async () => {
    const ran = await api.run<{ greeting: string; runId: string }>("hello", "run", { name: "Ada" });
    expect(ran).toEqual({
      runId: expect.stringMatching(/^run_[0-9a-z]{26}$/),
      result: { greeting: "Hello, Ada!", runId: ran.runId },
      runTimeMs: expect.any(Number),
      status: 200,
      replayed: false,
    });
    // A result's own status_code is a result too.
    expect(await api.run("hello", "teapot")).toMatchObject({
      status: 418,
      result: { status_code: 418 },
    });
  });

  it("rejects a function that threw with function_error and its run id; an unknown app with 404", async () => {
    const threw = await failure(api.run("hello", "fail", { message: "no luck" }));
    expect(threw).toMatchObject({ status: 500, code: "function_error", message: "no luck" });
    expect(threw.runId).toMatch(/^run_/);
    expect(threw.runTimeMs).toEqual(expect.any(Number));

    const ghost = await failure(api.run("ghost", "run", {}));
    expect(ghost).toMatchObject({ status: 404, code: "not_found" });
    expect(ghost.message).toMatch(/ghost/);
    expect(ghost.runId).toMatch(/^run_/);

    const unknown = newId("run");
    const notARun = await failure(api.status("hello", unknown));
    expect(notARun).toMatchObject({ status: 404, code: "not_found", runId: unknown });
  });

  it("runs in the background, shows the run, and waits for its end", async () => {
    const accepted = await api.run("napper", "run", { ms: 400 }, { async: true });
    expect(accepted).toEqual({ runId: expect.stringMatching(/^run_/), replayed: false });
    const shown = await api.status("napper", accepted.runId);
    expect(shown).toMatchObject({ run_id: accepted.runId, app: "napper", async: true });
    expect(["queued", "running"]).toContain(shown.status);

    const ended = await api.waitFor("napper", accepted.runId, {
      intervalMs: 50,
      timeoutMs: 30_000,
    });
    expect(ended).toMatchObject({ run_id: accepted.runId, status: "success", function: "run" });
    expect(ended.finished_at).toEqual(expect.any(String));
  });

  it("cancels a running and a queued run; an ended one is a 409", async () => {
    const running = await api.run("napper", "run", { ms: 5_000 }, { async: true });
    const queued = await api.run("napper", "run", { ms: 5_000 }, { async: true });
    // Behind the first on the app's one slot, so queued until the first has run its 5 s:
    // cancelled now, before waiting for the first to run (a busy machine once took that long).
    expect((await api.status("napper", queued.runId)).status).toBe("queued");
    expect(await api.cancel("napper", queued.runId)).toMatchObject({ status: "cancelled" });

    for (
      let i = 0;
      i < 200 && (await api.status("napper", running.runId)).status !== "running";
      i++
    )
      await new Promise((r) => setTimeout(r, 50));
    expect(await api.cancel("napper", running.runId)).toMatchObject({ status: "cancelled" });
    const again = await failure(api.cancel("napper", running.runId));
    expect(again).toMatchObject({ status: 409, code: "conflict", runId: running.runId });
    expect(await api.waitFor("napper", running.runId)).toMatchObject({ status: "cancelled" });
  });

  it("answers the first run again for the same Idempotency-Key, marked replayed", async () => {
    const key = `client-test-${Date.now()}`;
    const first = await api.run("napper", "run", { ms: 1 }, { async: true, idempotencyKey: key });
    const second = await api.run("napper", "run", { ms: 1 }, { async: true, idempotencyKey: key });
    expect(first.replayed).toBe(false);
    expect(second).toEqual({ runId: first.runId, replayed: true });

    const syncKey = `${key}-sync`;
    const once = await api.run("hello", "run", { name: "Bo" }, { idempotencyKey: syncKey });
    const twice = await api.run("hello", "run", { name: "Bo" }, { idempotencyKey: syncKey });
    expect(once.replayed).toBe(false);
    expect(twice).toEqual({ ...once, replayed: true });

    // The same key with another request is refused.
    const other = await failure(
      api.run("hello", "run", { name: "Cy" }, { idempotencyKey: syncKey }),
    );
    expect(other).toMatchObject({ status: 422, code: "unprocessable" });
  });

  it("redelivers a run's outcome to its webhook, signed, with the client and with runlet redeliver", async () => {
    const webhook = `${receiver.url}/redeliver`;
    const ran = await api.run("hello", "run", { name: "Di" }, { webhook, secret: SECRET });
    const [first] = await receiver.waitFor("/redeliver", 1);
    expect(JSON.parse(first?.body ?? "{}")).toMatchObject({ run_id: ran.runId, status: "success" });
    await delivered("hello", ran.runId);

    const view = await api.redeliver("hello", ran.runId, { secret: SECRET });
    expect(view).toMatchObject({ run_id: ran.runId, webhook: { target: webhook } });
    const [, second] = await receiver.waitFor("/redeliver", 2);
    expect(JSON.parse(second?.body ?? "{}")).toMatchObject({
      run_id: ran.runId,
      result: { greeting: "Hello, Di!" },
    });
    const headers = second?.headers ?? {};
    expect(
      await verifyWebhook({ secret: SECRET, body: second?.body ?? "", headers }),
    ).toMatchObject({ ok: true, requestId: ran.runId });
    await delivered("hello", ran.runId);

    // The CLI finds the run's app in the runs index, and delivers to another URL when asked.
    const args = ["redeliver", ran.runId, "--webhook", `${receiver.url}/cli`, "--json"];
    const shown = await cli(args, runlet.env);
    // Without a secret, it says on stderr that the delivery goes unsigned; stdout holds the JSON.
    expect(shown.stderr).toMatch(/^Note: the redelivery is unsigned \(/);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ run_id: ran.runId });
    const [viaCli] = await receiver.waitFor("/cli", 1);
    expect(JSON.parse(viaCli?.body ?? "{}")).toMatchObject({
      run_id: ran.runId,
      status: "success",
    });
  });

  it("says where a delivery could not connect, and sends failed ones again with runlet redeliver --failed", async () => {
    // A port nobody listens on: the system's pick, let go at once.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const closed = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const ran = await api.run(
      "hello",
      "run",
      { name: "Ed" },
      { webhook: `http://127.0.0.1:${closed}/gone` },
    );
    let view = await api.status("hello", ran.runId);
    for (let i = 0; i < 300 && view.webhook?.state !== "failed"; i++) {
      await new Promise((r) => setTimeout(r, 200));
      view = await api.status("hello", ran.runId);
    }
    // It said "Network connection lost." alone: neither what happened nor where.
    const lost = `could not connect to 127.0.0.1:${closed}, or it closed the connection before answering (Network connection lost.)`;
    expect(view.webhook).toMatchObject({ state: "failed", attempts: [{}, {}, {}] });
    for (const attempt of view.webhook?.attempts ?? []) expect(attempt.error).toBe(lost);
    expect((await cli(["status", ran.runId], runlet.env)).stdout).toContain(lost);

    // The runs index learns of the failed delivery as the shard reports it.
    const failed = async () => {
      const listed = await cli(
        ["runs", "--app", "hello", "--webhook", "failed", "--json"],
        runlet.env,
      );
      return (JSON.parse(listed.stdout).runs as { id: string }[]).some((r) => r.id === ran.runId);
    };
    for (let i = 0; i < 100 && !(await failed()); i++) await new Promise((r) => setTimeout(r, 100));
    // What it did on stdout, as redeliver <run_id> says it; what to do next on stderr.
    const again = ["redeliver", "--failed", "--app", "hello", "--webhook", `${receiver.url}/again`];
    const all = await cli(again, runlet.env);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^Delivering (\d+) of \1 run\(s\) again\.\n$/);
    expect(all.stderr).toMatch(
      /^`runlet runs --webhook failed` lists those whose delivery fails again\.$/m,
    );
    const deliveries = await receiver.waitFor("/again", 1);
    expect(deliveries.map((d) => JSON.parse(d.body).run_id)).toContain(ran.runId);
    await delivered("hello", ran.runId);
    const one = await cli(["redeliver", ran.runId, "--webhook", `${receiver.url}/one`], runlet.env);
    expect([one.code, one.stdout]).toEqual([
      0,
      `Delivering ${ran.runId} again to ${receiver.url}/one.\n`,
    ]);
    expect(one.stderr.split("\n")).toEqual([
      expect.stringMatching(/^Note: the redelivery is unsigned \(/),
      `\`runlet status ${ran.runId}\` shows its attempts.`,
      "",
    ]);
  }, 120_000);

  it("signs runlet run's webhook with --webhook-secret (DESIGN.md's flag), or with RUNLET_WEBHOOK_SECRET", async () => {
    const signedBy = async (path: string, args: string[], env: NodeJS.ProcessEnv) => {
      const ran = await cli(["run", "hello", "--webhook", `${receiver.url}${path}`, ...args], env);
      expect(ran.code).toBe(0);
      const [delivery] = await receiver.waitFor(path, 1);
      const body = delivery?.body ?? "";
      const headers = delivery?.headers ?? {};
      return {
        flag: (await verifyWebhook({ secret: "whsec_flag", body, headers })).ok,
        variable: (await verifyWebhook({ secret: SECRET, body, headers })).ok,
      };
    };
    const withVariable = { ...runlet.env, RUNLET_WEBHOOK_SECRET: SECRET };
    expect(await signedBy("/flag", ["--webhook-secret", "whsec_flag"], withVariable)).toEqual({
      flag: true,
      variable: false,
    });
    expect(await signedBy("/variable", [], withVariable)).toEqual({ flag: false, variable: true });
  });

  it("runs the example of docs/client.md as it is written", async () => {
    const docs = await readFile(join(ROOT, "docs/client.md"), "utf8");
    const example =
      /```js\n(import \{ createClient, RunletError \} from "runlet\/client";\n[\s\S]*?)```/.exec(
        docs,
      )?.[1];
    expect(example).toBeDefined();
    // From the repository's root "runlet/client" resolves through package.json's "exports", as
    // it would from node_modules.
    const { apiUrl, projectId, token } = runlet.local;
    const env = {
      ...process.env,
      RUNLET_API_URL: apiUrl,
      RUNLET_PROJECT: projectId,
      RUNLET_TOKEN: token,
    };
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--input-type=module", "--eval", example ?? ""],
      { cwd: ROOT, env, timeout: 60_000 },
    );
    expect(stdout.split("\n")).toEqual([
      expect.stringMatching(/^run_[0-9a-z]{26} Hello, Ada!$/),
      "success",
      expect.stringMatching(/^function_error 500 no luck run_[0-9a-z]{26}$/),
      "",
    ]);
  });
});
