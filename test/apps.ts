/** A small client of a started Runlet for the queue tests: deploy, submit, read, cancel, list. */
import { type Json, json, type Runlet } from "./harness.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A managed app whose `run` sleeps `input.ms` (default `defaultMs`) and answers
 * `{ start, end, seen }`: its own start and end (Date.now(), the machine's clock) and the run ids
 * its process has started, in order (a module-scope list).
 */
export function sleeper(toml: string[], defaultMs = 0): Record<string, string> {
  return {
    "runlet.toml": [...toml, ""].join("\n"),
    "main.mjs": `
const seen = [];
export async function run(input, ctx) {
  seen.push(ctx.runId);
  const start = Date.now();
  await new Promise((resolve) => setTimeout(resolve, input?.ms ?? ${defaultMs}));
  return { start, end: Date.now(), seen: [...seen] };
}
`,
  };
}

/**
 * The source of a wait inside a managed function taking `(input, ctx)`: `ms` (a JavaScript
 * expression), or until the run is cancelled (ctx.signal), which frees its replica at once.
 */
export const waitOrCancel = (ms: string) => `await new Promise((resolve) => {
    const timer = setTimeout(resolve, ${ms});
    ctx.signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); });
  });`;

export function client(runlet: Runlet) {
  const { apiUrl, baseUrl, projectId, token } = runlet.local;
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const runUrl = (app: string, runId: string) => `${apiUrl}/v4/${projectId}/${app}/runs/${runId}`;
  const view = async (app: string, runId: string) =>
    json(await fetch(runUrl(app, runId), { headers }));
  return {
    async deploy(files: Record<string, string>) {
      const res = await fetch(`${baseUrl}/v2/projects/${projectId}/apps`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          files: Object.entries(files).map(([path, text]) => ({
            path,
            contentBase64: Buffer.from(text).toString("base64"),
          })),
        }),
      });
      if (res.status !== 201) throw new Error(`deploy: ${res.status} ${await res.text()}`);
    },
    /** POST a run of `app`'s `fn` (`run`) with `input`; `query` is added as it is. */
    submit: (app: string, input: unknown, query = "", fn = "run") =>
      fetch(`${apiUrl}/v4/${projectId}/${app}/${fn}${query ? `?${query}` : ""}`, {
        method: "POST",
        headers,
        body: JSON.stringify(input ?? {}),
      }),
    view,
    cancel: (app: string, runId: string) =>
      fetch(runUrl(app, runId), { method: "DELETE", headers }),
    /** The run's view once `done` holds; throws with the last view after `timeoutMs`. */
    async viewWhen(app: string, runId: string, done: (v: Json) => boolean, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const v = await view(app, runId);
        if (done(v)) return v;
        if (Date.now() > deadline)
          throw new Error(`run ${runId} after ${timeoutMs} ms: ${JSON.stringify(v)}`);
        await sleep(100);
      }
    },
    /** Every run of `app` in the runs index, all pages (limit=200, nextToken). */
    async index(app: string): Promise<Json[]> {
      const runs: Json[] = [];
      let next: string | undefined;
      for (let page = 0; page < 50; page++) {
        const q = `app=${app}&limit=200${next ? `&nextToken=${encodeURIComponent(next)}` : ""}`;
        const res = await fetch(`${baseUrl}/v2/projects/${projectId}/runs?${q}`, { headers });
        if (!res.ok) throw new Error(`runs index: ${res.status} ${await res.text()}`);
        const body = await json(res);
        runs.push(...body.runs);
        next = body.nextPageToken;
        if (!next) return runs;
      }
      throw new Error("runs index: more than 50 pages");
    },
  };
}

/** `fn(0) … fn(count - 1)`, at most `concurrency` at a time; results in order. */
export async function inPool<T>(
  count: number,
  concurrency: number,
  fn: (i: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

/** The most intervals `[start, end)` that overlap at any instant (an end before a start at ties). */
export function maxOverlap(intervals: Array<{ start: number; end: number }>): number {
  const events = intervals.flatMap(({ start, end }) => [
    [start, 1],
    [end, -1],
  ]);
  events.sort((a, b) => (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number));
  let now = 0;
  let most = 0;
  for (const [, delta] of events) {
    now += delta as number;
    most = Math.max(most, now);
  }
  return most;
}

export { sleep };
