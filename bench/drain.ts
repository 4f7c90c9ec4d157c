/**
 * bench:edge's drain: how fast a queue of async runs empties through an app's replicas, from the
 * first submission to the last run's end.
 */

/** A run as the drain reads it (`GET …/runs/{run_id}`). */
interface RunEnd {
  status: string;
  finished_at: string | null;
}

/**
 * Submits `count` async runs at concurrency 16 and waits until every one has ended; the rate is
 * runs over the time from the first submission to the last run's end (its `finished_at`, by this
 * machine's clock). `submit` answers a run id, `view` a run's state.
 */
export async function drainRuns(
  count: number,
  calls: { submit: () => Promise<string>; view: (runId: string) => Promise<RunEnd> },
): Promise<{ perSecond: number; failures: number }> {
  const ids: string[] = [];
  const first = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        next++;
        ids.push(await calls.submit());
      }
    }),
  );
  const ends = new Map<string, { status: string; at: number }>();
  const readEnds = async (batch: string[]) => {
    for (let at = 0; at < batch.length; at += 64) {
      const chunk = batch.slice(at, at + 64);
      for (const [id, v] of await Promise.all(
        chunk.map(async (id) => [id, await calls.view(id)] as const),
      ))
        if (v.finished_at) ends.set(id, { status: v.status, at: Date.parse(v.finished_at) });
    }
  };
  // The last submitted end last (each shard is first come first served): wait for those,
  // then read every run, and again those still going.
  const deadline = Date.now() + 10 * 60_000;
  for (const wanted of [ids.slice(-16), ids]) {
    for (let left = wanted; left.length > 0; left = wanted.filter((id) => !ends.has(id))) {
      if (Date.now() > deadline) throw new Error(`${left.length} runs did not end in 10 min`);
      if (left !== wanted) await new Promise((r) => setTimeout(r, 100));
      await readEnds(left);
    }
  }
  const last = Math.max(...[...ends.values()].map((e) => e.at));
  const failures = [...ends.values()].filter((e) => e.status !== "success").length;
  return { perSecond: ids.length / ((last - first) / 1000), failures };
}
