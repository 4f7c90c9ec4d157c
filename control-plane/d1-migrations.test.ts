import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";

// The migrations drizzle-kit writes are the ones `wrangler d1 migrations apply` uses for the
// control plane on Workers (wrangler.toml, env "control-plane"): applied here to a local D1.
const run = promisify(execFile);
const ROOT = new URL("..", import.meta.url).pathname;
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const dir = await mkdtemp(join(tmpdir(), "runlet-d1-"));

afterAll(() => rm(dir, { recursive: true, force: true }));

const wrangler = (...args: string[]) =>
  run(
    process.execPath,
    [WRANGLER, ...args, "--env", "control-plane", "--local", "--persist-to", dir],
    {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" },
      timeout: 120_000,
    },
  );

it("applies with wrangler d1 migrations apply, triggers and audit indexes included", async () => {
  const applied = await wrangler("d1", "migrations", "apply", "runlet-control-plane");
  expect(applied.stdout).toMatch(/0003_audit_integer_keys\.sql/);
  const { stdout } = await wrangler(
    "d1",
    "execute",
    "runlet-control-plane",
    "--json",
    "--command",
    "SELECT type, name FROM sqlite_master WHERE tbl_name = 'audit_log' AND type IN ('trigger', 'index') ORDER BY name",
  );
  const names = (JSON.parse(stdout) as { results: { type: string; name: string }[] }[])[0]?.results;
  expect(names?.filter((r) => r.type === "trigger").map((r) => r.name)).toEqual([
    "audit_log_delete_only_expired",
    "audit_log_no_update",
  ]);
  expect(names?.filter((r) => r.type === "index").map((r) => r.name)).toEqual([
    "audit_action",
    "audit_action_actor",
    "audit_actor",
    "audit_time",
  ]);
  // Two wrangler commands, each applying or querying through a local workerd: 27 s on a busy
  // two-core machine, and past the suite's 60 s once beside two other agents' tests. A guard
  // against a hang, not a speed check.
}, 180_000);
