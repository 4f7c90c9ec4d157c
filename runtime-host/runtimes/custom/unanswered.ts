import type { HttpWorkload } from "../../pool/workload.ts";

/**
 * Why a request the app's server broke off before any answer failed. A server that is gone or
 * refused takes no more requests; one that closed this connection alone (Python's http.server,
 * for a handler that raised) still serves the others, and its output says why.
 */
export async function unanswered(
  replica: HttpWorkload,
  err: NodeJS.ErrnoException,
): Promise<string> {
  const code = err.code ?? err.message;
  const broke = err.code === "ECONNREFUSED" || err.code === "ECONNRESET";
  if (broke && (await replica.broke()))
    return `the app's server closed the connection without answering (${code}); its output (runlet logs --app) may say why`;
  return `the app's server failed to answer (${code})`;
}
