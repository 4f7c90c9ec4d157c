/**
 * `/dashboard/apps` and `/dashboard/apps/{name}`: the apps with their async runs queued and
 * running, and one app's versions, runtime, scaling, replicas now (from the runtime host), its
 * async queue (from the run store: not the host's waiting calls), recent runs and their failure
 * rate and run times (run-times.ts), and a link to what its replicas wrote (app-output.tsx);
 * beside each earlier version whose files are kept, "Roll back to this version" (app-rollback.tsx);
 * "Delete the app…" (app-delete.tsx), whose outcome the apps list says.
 */
import type { Hono } from "hono";
import { DEFAULT_START_TIMEOUT_S } from "../../../common/app-limits.ts";
import {
  type RunsNow,
  replicasNowText,
  runsNowText,
  stalledText,
} from "../../../common/app-now.ts";
import type { DashEnv } from "../api.ts";
import { Page } from "../layout.tsx";
import { runTimeRows } from "../run-times.ts";
import { Definition, EmptyRow, Notice, Pager, Table, Time } from "../ui.tsx";
import { AppDeletedNotice, AppDeleteLink } from "./app-delete.tsx";
import { RollbackCell, RollbackNotice } from "./app-rollback.tsx";
import { FirstRun, type RunItem, RunRows } from "./runs.tsx";

interface AppItem {
  name: string;
  runtime: string;
  version: number;
  scaling: {
    minReplicas: number;
    maxReplicas: number;
    replicaConcurrency: number;
    capacity: number;
    cooldown: number;
  };
  responseGracePeriod: number;
  queueTimeout: number;
  /** Absent from an older control plane's answer: the default, 30 s. */
  startTimeout?: number;
  /** What identifies the live version's files. */
  digest?: string | null;
  createdAt: string;
  updatedAt: string;
}

interface Version {
  version: number;
  deployedBy: { id: string; name?: string | null };
  createdAt: string;
  files: number;
  bytes: number;
  /** Its files are kept (the KEPT_BUNDLES newest): it can be rolled back to. Absent from older answers. */
  kept?: boolean;
  digest?: string | null;
  /** A rollback's: the version whose code it deployed again. */
  rolledBackFrom?: number | null;
}

interface Replicas {
  replicas: { starting: number; idle: number; busy: number };
  queued: number;
  runs: RunsNow;
  host: string;
  /** Hosts taking new work now: with none, queued runs wait. */
  hostsTakingWork?: number;
  hosts: Array<{ id: string; name: string; state: string; replicas: number; busy: number }>;
}

/** An app's async runs now, or a dash when the API did not say. */
const queueText = (runs: RunsNow | undefined): string => (runs ? runsNowText(runs) : "—");

/** Ended runs the failure rate is computed over (the newest). */
const RATED = 100;
/** Runs listed under "Recent runs". */
const RECENT = 20;
/**
 * Versions on one page of an app, the newest first; older ones are the next pages. Every one
 * was on it: an app deployed 1,000 times had a page 32,000 px tall, its recent runs at the end.
 */
export const VERSIONS_SHOWN = 20;

export function registerApps(dash: Hono<DashEnv>) {
  dash.get("/apps", async (c) => {
    const listed = await c.var.api.project<{ apps: Array<AppItem & { runs: RunsNow }> }>(
      "GET",
      "/apps",
    );
    return c.html(
      <Page title="Apps" section="/dashboard/apps" session={c.var.session}>
        <AppDeletedNotice c={c} />
        {listed.ok ? (
          <Table
            label="Apps"
            head={[
              "Name",
              "Runtime",
              "Version",
              "Replicas (min–max)",
              "Capacity",
              "Async runs",
              "Updated",
            ]}
          >
            {listed.data.apps.length === 0 ? (
              <EmptyRow span={7}>
                {/* The CLI deploys to local.json's project unless told: this one, by name. */}
                No app yet:{" "}
                <code>{`RUNLET_PROJECT=${c.var.session.projectId} npx runlet deploy examples/hello`}</code>
              </EmptyRow>
            ) : (
              listed.data.apps.map((a) => (
                <tr>
                  <td class="name">
                    <a href={`/dashboard/apps/${a.name}`}>{a.name}</a>
                  </td>
                  <td>{a.runtime}</td>
                  <td class="num">{a.version}</td>
                  <td class="num">{`${a.scaling.minReplicas}–${a.scaling.maxReplicas}`}</td>
                  <td class="num">{a.scaling.capacity}</td>
                  <td class="num">{queueText(a.runs)}</td>
                  <td>
                    <Time at={a.updatedAt} />
                  </td>
                </tr>
              ))
            )}
          </Table>
        ) : (
          <Notice kind="error">{listed.message}</Notice>
        )}
      </Page>,
    );
  });

  dash.get("/apps/:name", async (c) => {
    const name = encodeURIComponent(c.req.param("name"));
    const { api, session } = c.var;
    const cursor = c.req.query("cursor") || undefined;
    const page = new URLSearchParams({ limit: String(VERSIONS_SHOWN) });
    if (cursor) page.set("nextToken", cursor);
    const runsOf = (query: string) => api.project<{ runs: RunItem[] }>("GET", `/runs?${query}`);
    const [app, versions, replicas, recent, succeeded, failed] = await Promise.all([
      api.project<AppItem>("GET", `/apps/${name}`),
      api.project<{ versions: Version[]; nextPageToken?: string }>(
        "GET",
        `/apps/${name}/versions?${page}`,
      ),
      api.project<Replicas>("GET", `/apps/${name}/replicas`),
      runsOf(`app=${name}&limit=${RECENT}`),
      // The ended runs themselves: the newest runs alone, 100 queued by a burst, gave "— of the
      // last 0 ended runs" beside hundreds that had ended.
      runsOf(`app=${name}&status=success&limit=${RATED}`),
      runsOf(`app=${name}&status=failure&limit=${RATED}`),
    ]);
    if (!app.ok) {
      return c.html(
        <Page title="App" section="/dashboard/apps" session={session}>
          <Notice kind="error">{app.message}</Notice>
        </Page>,
        app.status === 404 ? 404 : 200,
      );
    }
    const a = app.data;
    // The runs index knows runs by the app's name: those made before this app was (an earlier
    // app of the name, deleted since) are not its runs, nor in its failure rate.
    const ours = (answer: typeof recent) =>
      (answer.ok ? answer.data.runs : []).filter(
        (r) => Date.parse(r.createdAt) >= Date.parse(a.createdAt),
      );
    const runs = ours(recent);
    const ended = [...ours(succeeded), ...ours(failed)]
      .sort((x, y) => Date.parse(y.createdAt) - Date.parse(x.createdAt))
      .slice(0, RATED);
    const failures = ended.filter((r) => r.status === "failure").length;
    const rate = ended.length ? `${Math.round((failures / ended.length) * 100)} %` : "—";
    const now = replicas.ok ? replicas.data : undefined;
    return c.html(
      <Page title={`App ${a.name}`} section="/dashboard/apps" session={session}>
        <RollbackNotice c={c} name={a.name} />
        <Definition
          items={[
            ["Runtime", a.runtime],
            ["Live version", String(a.version)],
            ["Replicas", `${a.scaling.minReplicas} to ${a.scaling.maxReplicas}`],
            ["Calls per replica", String(a.scaling.replicaConcurrency)],
            ["Cooldown", `${a.scaling.cooldown} s idle before a replica stops`],
            ["Response grace period", `${a.responseGracePeriod} s`],
            ["Queue timeout", `${a.queueTimeout} s`],
            ["Start timeout", `${a.startTimeout ?? DEFAULT_START_TIMEOUT_S} s`],
            [
              "Async runs",
              now ? (
                <>
                  {queueText(now.runs)}
                  {stalledText(now.runs, now.hostsTakingWork)}
                  {now.runs.queued > 0 ? (
                    <>
                      {" "}
                      (<a href={`/dashboard/runs?app=${name}&status=queued`}>the queued runs</a>)
                    </>
                  ) : null}
                </>
              ) : replicas.ok ? (
                "—"
              ) : (
                replicas.message
              ),
            ],
            ["Replicas now", now ? replicasNowText(now) : replicas.ok ? "—" : replicas.message],
            [
              "On hosts",
              now?.hosts.length
                ? now.hosts
                    .map(
                      (h) =>
                        `${h.name} (${h.replicas} ${h.replicas === 1 ? "replica" : "replicas"}, ${h.busy} busy, ${h.state})`,
                    )
                    .join("; ")
                : "none now",
            ],
            ["Failure rate", `${rate} of the last ${ended.length} ended runs (${failures} failed)`],
            ...runTimeRows(ended),
          ]}
        />
        <p>
          {/* A custom app's server writes there, not to its runs' logs (runlet logs --app). */}
          <a href={`/dashboard/apps/${name}/output`}>Output of its replicas</a>
          <span class="muted">
            {" "}
            (what its processes wrote: a custom app's server, a crash's last words)
          </span>
        </p>
        <h2>Versions</h2>
        {versions.ok ? (
          <>
            <Table label="Versions" head={["Version", "Deployed", "By", "Files", "Size", ""]}>
              {versions.data.versions.map((v) => (
                <tr>
                  <td class="num">
                    {v.version}
                    {v.rolledBackFrom ? (
                      <div class="hint">{`rollback to ${v.rolledBackFrom}`}</div>
                    ) : null}
                  </td>
                  <td>
                    <Time at={v.createdAt} />
                  </td>
                  <td class="name" title={v.deployedBy.id}>
                    {v.deployedBy.name ?? v.deployedBy.id}
                  </td>
                  <td class="num">{v.files}</td>
                  <td class="num">{`${(v.bytes / 1024).toFixed(1)} KiB`}</td>
                  <RollbackCell name={a.name} version={v} live={a.version} liveDigest={a.digest} />
                </tr>
              ))}
            </Table>
            {versions.data.nextPageToken || cursor ? (
              <Pager
                path={`/dashboard/apps/${name}`}
                query={{}}
                next={versions.data.nextPageToken}
                first={Boolean(cursor)}
              />
            ) : null}
          </>
        ) : (
          <Notice kind="error">{versions.message}</Notice>
        )}
        <h2>Recent runs</h2>
        <Table
          label="Recent runs"
          head={["Run", "App", "Function", "Mode", "Status", "Created", "Duration", "Webhook"]}
        >
          <RunRows
            runs={runs}
            filtered={false}
            none={<FirstRun project={c.var.session.projectId} app={name} />}
          />
        </Table>
        <p>
          <a href={`/dashboard/runs?app=${name}`}>All runs of {a.name}</a>
        </p>
        <AppDeleteLink c={c} name={a.name} />
      </Page>,
    );
  });
}
