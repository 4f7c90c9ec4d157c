// A command sent while `runlet start` restarts a component killed under it (the control plane
// SIGKILLed mid-deploy: the next command in that second) was told "is Runlet running (`npm
// start`)?", as if nothing ran. With the home's start alive, it says a component is restarting.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ENV } from "../common/consts.ts";
import { runlet } from "./commands/test-support.ts";

let home: string;
let nothing: string;
/** Stands for a live `runlet start`: a process whose command line says `start`. */
let start: ChildProcess;

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "runlet-unreachable-"));
  const gone = createServer();
  await new Promise<void>((resolve) => gone.listen(0, "127.0.0.1", resolve));
  nothing = `http://127.0.0.1:${(gone.address() as AddressInfo).port}`;
  await new Promise((resolve) => gone.close(resolve));
  const local = { baseUrl: nothing, apiUrl: nothing, projectId: "prj_1", token: "t" };
  await writeFile(join(home, "local.json"), JSON.stringify(local), { mode: 0o600 });
  start = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60_000)", "start"], {
    stdio: "ignore",
  });
});
afterAll(async () => {
  start.kill();
  await rm(home, { recursive: true, force: true });
});

const env = {
  [ENV.home]: undefined as string | undefined,
  [ENV.baseUrl]: undefined,
  [ENV.apiUrl]: undefined,
  [ENV.project]: undefined,
  [ENV.token]: undefined,
};

it("says a component is restarting when the home's runlet start runs, else asks whether it runs", async () => {
  const commands = [["apps"], ["run", "hello"], ["status", "run_01m8fg78rq74j8vr6r3fntjfa3"]];
  for (const args of commands) {
    const alone = await runlet(args, { ...env, [ENV.home]: home });
    expect(alone.stderr, args.join(" ")).toContain(
      `cannot reach ${nothing} — is Runlet running (\`npm start\`)?`,
    );
  }
  await writeFile(join(home, "runlet.pid"), `${start.pid}\n${home}\n`);
  for (const args of commands) {
    const said = await runlet(args, { ...env, [ENV.home]: home });
    expect(said.code, args.join(" ")).toBe(1);
    expect(said.stderr, args.join(" ")).toContain(
      `cannot reach ${nothing} — runlet start (pid ${start.pid}) runs on ${home}, so a component of it is likely restarting after it stopped: try again in a few seconds (what happened: ${join(home, "logs", "supervisor.log")})`,
    );
  }
});
