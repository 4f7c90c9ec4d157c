/**
 * The watchdog of a running async run: asks the host about it when its report has not come (a
 * lost callback, a lost host) and says what follows. The shard's alarm calls it every
 * RUN_WATCHDOG_MS (30 s) per running run, and at once after a restart.
 */

import type { HostRunState } from "../../common/protocol/host.ts";
import type { Env } from "../env.ts";
import { isHostAlive } from "../placement.ts";
import { askHost } from "./host-calls.ts";
import type { RunRow } from "./rows.ts";

/** Unanswered questions in a row before the run is given up as lost. */
const HOST_MISSES = 3;
/** How long past its deadline a run may still be reported before it is failed. */
const DEADLINE_MARGIN_MS = 60_000;

export type Verdict =
  /** The run failed: the host lost it, stopped answering, or it outlived its deadline. */
  | { kind: "failed"; message: string }
  /** The host has its end (its report was lost): that end. */
  | { kind: "ended"; run: HostRunState }
  /** Still running, or no answer yet: the unanswered questions in a row. */
  | { kind: "running"; misses: number };

const LOST = "the runtime host lost the run (it restarted or stopped)";
/** Not only "lost": a host frozen or cut off may well have finished the run; nobody can tell. */
const GONE =
  "the runtime host lost the run, or stopped answering about it: the registry has it down, so whether it finished there is not known";

export async function watch(env: Env, row: RunRow): Promise<Verdict> {
  const answer = await askHost(env, row.host_url ?? env.RUNTIME_HOST_URL, row.id);
  if (answer.kind === "lost") return { kind: "failed", message: LOST };
  // A host the registry no longer has up (down for 15 s, or gone) will not come back with it.
  if (
    answer.kind === "silent" &&
    row.host_id !== null &&
    (await isHostAlive(env, row.host_id)) === false
  )
    return { kind: "failed", message: GONE };
  if (answer.kind === "state" && answer.run.status !== "running")
    return { kind: "ended", run: answer.run };
  const misses = answer.kind === "silent" ? row.host_misses + 1 : 0;
  if (row.deadline_at !== null && Date.now() > row.deadline_at + DEADLINE_MARGIN_MS)
    return {
      kind: "failed",
      message: "the run did not finish within the app's response_grace_period",
    };
  if (misses >= HOST_MISSES)
    return { kind: "failed", message: "the runtime host stopped answering about the run" };
  return { kind: "running", misses };
}
