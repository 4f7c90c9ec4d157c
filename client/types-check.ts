/**
 * Type checks of index.d.ts against real use: `tsc --noEmit -p .` reads this file (it is never
 * run). It imports `runlet/client` by the package's own name, so that the types are those of
 * package.json's "exports" — index.d.ts, as a user's project gets them — and not the JSDoc of
 * index.mjs. Each `@ts-expect-error` is a use the types must refuse.
 */
import {
  type AcceptedRun,
  createClient,
  isEnded,
  RunletError,
  type RunResult,
  type RunView,
} from "runlet/client";
import type { RunView as ServedRunView } from "../common/protocol/run-view.ts";

type Equal<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(_: T): void {}

// The client's copy of a run's view is the one the Worker serves (common/protocol/run-view.ts),
// field for field: index.d.ts may not import the repository's own TypeScript.
assertType<Equal<RunView, ServedRunView>>(true);

export async function usage(): Promise<void> {
  const runlet = createClient({ apiUrl: "http://127.0.0.1:8787", project: "prj_1", token: "t" });
  // @ts-expect-error the token is required
  createClient({ apiUrl: "http://127.0.0.1:8787", project: "prj_1" });
  createClient({ apiUrl: "u", project: "p", token: "t", fetch: (url, init) => fetch(url, init) });

  const sync = await runlet.run<{ greeting: string }>("hello", "run", { name: "Ada" });
  assertType<Equal<typeof sync, RunResult<{ greeting: string }>>>(true);
  const greeting: string = sync.result.greeting;
  const status: number = sync.status;
  const replayed: boolean = sync.replayed;

  const accepted = await runlet.run("hello", "run", {}, { async: true, idempotencyKey: "k" });
  assertType<Equal<typeof accepted, AcceptedRun>>(true);
  // @ts-expect-error an accepted run has no result
  accepted.result;

  const either = await runlet.run("hello", "run", null, { async: Math.random() > 0.5 });
  assertType<Equal<typeof either, RunResult | AcceptedRun>>(true);

  // @ts-expect-error options are checked
  await runlet.run("hello", "run", {}, { asnyc: true });

  const signal = AbortSignal.timeout(1_000);
  const view: RunView = await runlet.waitFor("hello", accepted.runId, {
    intervalMs: 100,
    timeoutMs: 60_000,
    signal,
  });
  if (isEnded(view.status)) {
    assertType<Equal<typeof view.status, "success" | "failure" | "cancelled">>(true);
  }
  const attempts = view.webhook?.attempts.map((a) => a.verdict) ?? [];
  const firstDelivery: number | undefined = view.webhook?.earlier?.[0]?.delivery;
  const host: string | null = view.host;
  await runlet.status("hello", view.run_id, { signal });
  // A run this client started needs no app.
  const again: RunView = await runlet.waitFor(accepted.runId, { timeoutMs: 1_000 });
  await runlet.status(again.run_id);
  await runlet.cancel("hello", view.run_id);
  await runlet.redeliver("hello", view.run_id, { webhook: "https://example.com/h", secret: "s" });

  try {
    await runlet.run("ghost", "run");
  } catch (err) {
    if (err instanceof RunletError) {
      const code: "not_found" | "function_error" | "network_error" | string = err.code;
      const runId: string | undefined = err.runId;
      const httpStatus: number = err.status;
      void [code, runId, httpStatus, err.message, err.runTimeMs, err.body];
    }
  }
  void [greeting, status, replayed, attempts, firstDelivery, host];
}
