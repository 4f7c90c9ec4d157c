/**
 * One local Runlet for the end-to-end files that only use its APIs, started once per test
 * process (vitest's fork, which runs file after file) instead of once per file: a stack's start
 * is about 6.5 s of CPU, and the suite started one for each of these files.
 *
 * Each file gets a project of its own, made by the local owner: its apps, runs, secrets, audit
 * log and runs index are apart from the other files'. What a project does not separate (the
 * runtime host and its slots, the home's logs) is shared, so a file that changes the stack
 * itself, restarts it or needs other settings starts its own with `startRunlet`. The stack
 * stops when the test process ends (it is supervised by it: harness.ts).
 */
import { json, newHome, type Runlet, startRunlet } from "./harness.ts";

let shared: Promise<Runlet> | undefined;

/**
 * The shared stack, seen through a new project named `name` (owned by the local owner, whose
 * token `local.token` is). `env` names the project for the CLI (`RUNLET_PROJECT`). `stop` does
 * nothing: the stack outlives the file.
 */
export async function sharedRunlet(name: string): Promise<Runlet> {
  shared ??= newHome().then((home) => startRunlet(home));
  const stack = await shared;
  const { baseUrl, token } = stack.local;
  const res = await fetch(`${baseUrl}/v2/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name }),
  });
  const project = await json(res);
  if (res.status !== 201)
    throw new Error(`a project for ${name}: ${res.status} ${project.message}`);
  return {
    ...stack,
    local: { ...stack.local, projectId: project.id },
    env: { ...stack.env, RUNLET_PROJECT: project.id },
    stop: async () => null,
  };
}
