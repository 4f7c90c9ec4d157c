/**
 * `/dashboard/apps/{name}/output`: what the app's replicas wrote, as `runlet logs --app` shows
 * it — a custom app's server (whose requests have no run log of their own), a managed app's
 * module load and timers, a crash's last words — replica by replica, the newest first: those
 * running and the last few that ended on each host. Before, the dashboard had no way to it: a
 * Python app's failed request showed "no logs of run …" and a CLI command.
 */
import type { Hono } from "hono";
import { exitOf } from "../../../common/exit-status.ts";
import type { AppOutput } from "../../../common/protocol/host.ts";
import type { DashEnv } from "../api.ts";
import { Page } from "../layout.tsx";
import { appPage, LogLines, Notice, Time } from "../ui.tsx";

type Replica = AppOutput["replicas"][number];

function ReplicaOutput({ replica: r }: { replica: Replica }) {
  return (
    <section>
      <h2>{`Replica ${r.pid ?? "?"} of version ${r.version}`}</h2>
      <p class="muted">
        {`${r.state}${r.exit ? ` (${exitOf(r.exit)})` : ""} on ${r.host}, `}
        {r.endedAt ? (
          <>
            <Time at={r.startedAt} /> to <Time at={r.endedAt} />
          </>
        ) : (
          <>
            since <Time at={r.startedAt} />
          </>
        )}
      </p>
      {r.lines.length === 0 ? (
        <p class="muted">It wrote nothing.</p>
      ) : (
        <LogLines
          lines={r.lines}
          dropped={
            r.dropped > 0
              ? `${r.dropped} earlier bytes were dropped: a replica keeps its newest 256 KiB`
              : undefined
          }
        />
      )}
    </section>
  );
}

export function registerAppOutput(dash: Hono<DashEnv>) {
  dash.get("/apps/:name/output", async (c) => {
    const name = c.req.param("name");
    const output = await c.var.api.project<AppOutput>(
      "GET",
      `/apps/${encodeURIComponent(name)}/output`,
    );
    return c.html(
      <Page title={`Output of ${name}`} section="/dashboard/apps" session={c.var.session}>
        <p>
          <a href={appPage(name)}>App {name}</a>
        </p>
        {!output.ok ? (
          <Notice kind="error">{output.message}</Notice>
        ) : (
          <>
            {output.data.unreachable > 0 ? (
              <Notice kind="warn">{`${output.data.unreachable} runtime host(s) did not answer: their replicas are not shown.`}</Notice>
            ) : null}
            {output.data.replicas.length === 0 ? (
              <p class="muted">
                {`No replica of ${name} has run since its hosts started (replicas start at its first call).`}
              </p>
            ) : (
              output.data.replicas.map((r) => <ReplicaOutput replica={r} />)
            )}
          </>
        )}
      </Page>,
      !output.ok && output.status === 404 ? 404 : 200,
    );
  });
}
