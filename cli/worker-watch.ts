/**
 * How the worker's process (worker-dev.ts) sees that wrangler lost its workerd: wrangler keeps
 * running when a workerd it started dies, and the Worker then refuses or hangs every request. So
 * the process watches its workerd processes (Linux's /proc; elsewhere there are none to see) and
 * whether the Worker answers at all, and ends itself when either fails; `runlet start` then
 * restarts the whole worker.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Children of `pid` (every thread's), or none if it is gone or /proc is missing. */
export function childrenOf(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const tid of tasks) {
    try {
      const list = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8");
      for (const child of list.split(/\s+/).filter(Boolean)) found.push(Number(child));
    } catch {
      // the thread ended meanwhile
    }
  }
  return found;
}

/** Every process under `root` whose command name is `name`. */
export function descendantsNamed(root: number, name: string): number[] {
  const found: number[] = [];
  const todo = childrenOf(root);
  for (let at = 0; at < todo.length && at < 10_000; at++) {
    const pid = todo[at] as number;
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === name) found.push(pid);
    } catch {
      continue; // gone meanwhile
    }
    todo.push(...childrenOf(pid));
  }
  return found;
}

/**
 * Calls `onLoss` once when a process named `name` that ran under this one has exited. With
 * `replaceable` (wrangler dev reloads a changed Worker on a new workerd), one replaced at once by
 * its starter is no loss: only fewer of them than before, two checks in a row, is. Returns a
 * function that ends the watch.
 */
export function watchDescendants(
  name: string,
  onLoss: (gone: number[]) => void,
  { replaceable = false, everyMs = 1_000 } = {},
): () => void {
  let seen = descendantsNamed(process.pid, name);
  let misses = 0;
  const timer = setInterval(() => {
    const now = descendantsNamed(process.pid, name);
    const gone = seen.filter((pid) => !now.includes(pid));
    if (gone.length === 0 || (replaceable && now.length >= seen.length)) {
      seen = now;
      misses = 0;
      return;
    }
    if (replaceable && ++misses < 2) return;
    clearInterval(timer);
    onLoss(gone);
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Calls `onSilent` once when `url` has failed to answer 2xx `misses` times in a row, asked every
 * `everyMs` with a timeout of `timeoutMs` each: a Worker whose workerd died before it could be
 * watched, or hangs. Generous, so that a busy machine is not taken for a dead Worker. Returns a
 * function that ends the watch.
 */
export function watchAnswers(
  url: string,
  onSilent: () => void,
  { everyMs = 2_000, timeoutMs = 5_000, misses = 3 } = {},
): () => void {
  let missed = 0;
  let ended = false;
  let timer: NodeJS.Timeout | undefined;
  const ask = async () => {
    let ok = false;
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
      await res.arrayBuffer();
      ok = res.ok;
    } catch {
      // refused, cut off or timed out
    }
    if (ended) return;
    missed = ok ? 0 : missed + 1;
    if (missed >= misses) {
      ended = true;
      onSilent();
      return;
    }
    timer = setTimeout(ask, everyMs);
    timer.unref();
  };
  timer = setTimeout(ask, everyMs);
  timer.unref();
  return () => {
    ended = true;
    clearTimeout(timer);
  };
}
