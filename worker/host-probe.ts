/**
 * Whether a runtime host still answers at all. A host that freezes (a stopped process, a machine
 * that hangs) keeps its connections open, so a call it holds would wait its whole limit (six
 * minutes and more); its `/healthz`, answered by the same process, says within seconds.
 */
import { HEADER } from "../common/consts.ts";
import type { Env } from "./env.ts";

/** Between two health checks of the host a call waits on (`HOST_PROBE_MS` shortens it in tests). */
const PROBE_EVERY_MS = 10_000;
/** How long a health check waits for the host's answer. */
const PROBE_PATIENCE_MS = 5_000;

/**
 * Whether the host at `url` answers its `/healthz` within `patienceMs`: 200, or its own refusal
 * (`X-Runlet-Host-Error`), as the 503 of a host that is stopping, which still finishes the calls
 * it holds within its grace. Taken for silence, it had every sync call held 10 s or more cut
 * with 502 while the host finished it (the operator's exploratory round).
 */
export async function hostAnswers(url: string, patienceMs = PROBE_PATIENCE_MS): Promise<boolean> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(patienceMs) });
    await res.body?.cancel();
    return res.ok || res.headers.get(HEADER.hostError) === "1";
  } catch {
    return false;
  }
}

/**
 * While a call waits for the answer of the host at `url`: every 10 s, asks the host whether it
 * answers, and calls `silent` (once) when it does not. Call the returned function when the
 * answer came.
 */
export function probeWhileWaiting(env: Env, url: string, silent: () => void): () => void {
  const every = Number(env.HOST_PROBE_MS) || PROBE_EVERY_MS;
  const patience = Math.min(PROBE_PATIENCE_MS, every / 2);
  let done = false;
  let timer: ReturnType<typeof setTimeout>;
  const probe = async () => {
    const answers = await hostAnswers(url, patience);
    if (done) return;
    if (answers) timer = setTimeout(probe, every);
    else silent();
  };
  timer = setTimeout(probe, every);
  return () => {
    done = true;
    clearTimeout(timer);
  };
}
