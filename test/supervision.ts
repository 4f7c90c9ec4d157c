/** Helpers of the supervisor's end-to-end tests: a component's processes, waiting, serving. */
import { readFileSync } from "node:fs";
import { sleep } from "./apps.ts";
import { isAlive, processTree, type Runlet } from "./harness.ts";

/** Each component's entry, as its command line names it. */
export const COMPONENTS = {
  "runtime host": "runtime-host/main.ts",
  "control plane": "control-plane/server.ts",
  worker: "cli/worker-dev.ts",
} as const;
export type Component = keyof typeof COMPONENTS;

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return "";
  }
}

function nameOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
}

/** The process of `component` under the stack's `runlet start`, if one runs. */
export function pidOf(stack: Runlet, component: Component): number | undefined {
  const entry = COMPONENTS[component];
  return processTree(stack.process.pid as number).find((pid) => commandOf(pid).includes(entry));
}

/** The workerd processes of the stack. */
export function workerdPids(stack: Runlet): number[] {
  return processTree(stack.process.pid as number).filter((pid) => nameOf(pid) === "workerd");
}

/** Polls `probe` every 200 ms until it gives a value; throws after `timeoutMs`. */
export async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(200);
  }
}

/** SIGKILL for `pid`, and waits until it is gone (bounded). */
export async function kill9(pid: number): Promise<void> {
  process.kill(pid, "SIGKILL");
  await until("killed", () => (isAlive(pid) ? undefined : true), 10_000);
}

/**
 * Resolves once the stack serves again: a sync run of `app` through the Worker and the runtime
 * host answers 200, and the control plane lists the project's apps. Bounded by `timeoutMs`.
 */
export async function serving(stack: Runlet, app: string, timeoutMs: number): Promise<void> {
  const { apiUrl, baseUrl, projectId, token } = stack.local;
  const headers = { authorization: `Bearer ${token}` };
  await until(
    "serving again",
    async () => {
      try {
        const run = await fetch(`${apiUrl}/v4/${projectId}/${app}/run`, {
          method: "POST",
          headers,
          body: "{}",
          signal: AbortSignal.timeout(10_000),
        });
        await run.arrayBuffer();
        const apps = await fetch(`${baseUrl}/v2/projects/${projectId}/apps`, {
          headers,
          signal: AbortSignal.timeout(5_000),
        });
        await apps.arrayBuffer();
        return run.status === 200 && apps.status === 200 ? true : undefined;
      } catch {
        return undefined; // refused or cut off while a component restarts
      }
    },
    timeoutMs,
  );
}
