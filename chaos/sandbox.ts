/**
 * Chaos scenarios of the sandbox: an app trying to get out of its replica, through the run API
 * of a real stack. Skipped where the runtime host has no bubblewrap (it says so at start).
 */
import { execFileSync } from "node:child_process";
import { client } from "../test/apps.ts";
import { json, type Runlet } from "../test/harness.ts";
import { errorText, type Outcome, type Scenario } from "./scenario.ts";

function noBubblewrap(): string | undefined {
  try {
    execFileSync("bwrap", ["--version"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "no bubblewrap on this machine";
  }
}

async function probe(stack: Runlet, input: Record<string, unknown>) {
  const res = await client(stack).submit("probe", input);
  const body = await json(res);
  return { status: res.status, result: body.result, error: body.error ?? body.message };
}

/** Whether the custom app still answers (another app, beside the one misbehaving). */
async function webAnswers(stack: Runlet): Promise<boolean> {
  const { apiUrl, projectId, token } = stack.local;
  const res = await fetch(`${apiUrl}/v4/${projectId}/web/`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(30_000),
  });
  return res.status === 200 && (await res.text()).startsWith("web ");
}

const sandboxed = (scenario: Omit<Scenario, "skip">): Scenario => ({
  ...scenario,
  skip: noBubblewrap,
});

export function sandboxScenarios(): Scenario[] {
  return [
    sandboxed({
      name: "An app connects to the host's loopback",
      expected: "the control plane, the Worker, the runtime host and another app's port: refused",
      async run(stack): Promise<Outcome> {
        const targets = { ...stack.ports, web: 8000 };
        const seen: string[] = [];
        for (const [name, port] of Object.entries(targets)) {
          const { result } = await probe(stack, { op: "connectTo", host: "127.0.0.1", port });
          seen.push(`${name} ${result}`);
        }
        return { observed: seen.join(", "), ok: seen.every((s) => s.endsWith("ECONNREFUSED")) };
      },
    }),
    sandboxed({
      name: "A fork loop",
      expected: "stops at the process limit (EAGAIN); another app answers",
      async run(stack) {
        const { result } = await probe(stack, { op: "forkLoop" });
        const other = await webAnswers(stack);
        const loop = result as { started: number; refused: string };
        const ok = loop?.refused === "EAGAIN" && other;
        return {
          observed: `${loop?.started} started, then ${loop?.refused}; other app ${other ? "answers" : "does not"}`,
          ok,
        };
      },
    }),
    sandboxed({
      name: "An app fills /tmp",
      expected: "its write fails ENOSPC; another app answers",
      async run(stack) {
        const { result } = await probe(stack, { op: "fill", path: "/tmp/big" });
        const fill = result as { mib: number; code: string };
        const other = await webAnswers(stack);
        return {
          observed: `${fill?.code} after ${fill?.mib} MiB; other app ${other ? "answers" : "does not"}`,
          ok: fill?.code === "ENOSPC" && other,
        };
      },
    }),
    sandboxed({
      name: "A memory hog",
      expected: "its run fails cleanly (an error, no hang); another app answers",
      async run(stack) {
        const { status, error } = await probe(stack, { op: "hog" });
        const other = await webAnswers(stack);
        return {
          observed: `run answered ${status}: ${errorText(error).slice(0, 80)}; other app ${other ? "answers" : "does not"}`,
          ok: status >= 400 && status < 600 && other,
        };
      },
    }),
  ];
}
