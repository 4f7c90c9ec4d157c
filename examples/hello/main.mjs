/**
 * POST {api_url}/v4/{project}/hello/run  with body {"name": "Ada"}
 * → {"run_id": "run_…", "result": {"greeting": "Hello, Ada!", "runId": "run_…"}, "run_time_ms": …}
 *
 * @param {{ name?: string } | null} input  the caller's JSON body
 * @param {{ runId: string, async: boolean, signal: AbortSignal, log: (...args: unknown[]) => void }} ctx
 */
export function run(input, ctx) {
  const name = typeof input?.name === "string" && input.name ? input.name : "world";
  ctx.log(`greeting ${name}`);
  return { greeting: `Hello, ${name}!`, runId: ctx.runId };
}

/** Shows how a function chooses its HTTP status: `{status_code: 418, ...}`. */
export function teapot() {
  return { status_code: 418, message: "I'm a teapot" };
}

/**
 * A function that throws: the caller gets 500 {run_id, error: {message}} and no stack.
 * @param {{ message?: string } | null} input
 */
export function fail(input) {
  throw new Error(input?.message ?? "this function always fails");
}
