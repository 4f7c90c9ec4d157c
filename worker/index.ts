import { Hono } from "hono";
import type { WorkerEnv } from "./env.ts";
import { registerRun } from "./routes/run.ts";
import { registerRuns } from "./routes/runs.ts";

export { RunShard } from "./runs/shard.ts";

/** `{api_url}`: the edge that callers of deployed functions talk to. */
export const app = new Hono<WorkerEnv>();

app.get("/healthz", (c) => c.json({ ok: true, component: "worker" }));
// Before the run routes: a run's own URL is under its app's path.
registerRuns(app);
registerRun(app);
app.notFound((c) => c.json({ message: `no route for ${c.req.method} ${c.req.path}` }, 404));
app.onError((err, c) => {
  console.error("[worker] unexpected error:", err);
  return c.json({ message: "internal error" }, 500);
});

export default app;
