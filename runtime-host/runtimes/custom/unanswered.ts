import { exitOf } from "../../../common/exit-status.ts";
import type { HttpWorkload } from "../../pool/workload.ts";

/**
 * Why a request the app's server broke off before any answer failed. A server that is gone or
 * refused takes no more requests; one that closed this connection alone (Python's http.server,
 * for a handler that raised) still serves the others, and its output says why. A process that
 * exited by itself (os._exit(3) in a handler) is said to have, with its exit code or signal:
 * "failed to answer (ECONNRESET)" said neither that nor where its last words were.
 */
export async function unanswered(
  replica: HttpWorkload,
  err: NodeJS.ErrnoException,
): Promise<string> {
  const code = err.code ?? err.message;
  const output = `its output (runlet logs --app ${replica.spec.app}) may say why`;
  const broke = err.code === "ECONNREFUSED" || err.code === "ECONNRESET";
  if (!broke) return `the app's server failed to answer (${code})`;
  const found = await replica.broke();
  if (found.serves)
    return `the app's server closed the connection without answering (${code}); ${output}`;
  if (found.exited)
    return `the app's process exited (${exitOf(found.exited)}) before it answered (${code}); ${output}`;
  return `the app's server failed to answer (${code})`;
}
