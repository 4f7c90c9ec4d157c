/**
 * What the run store's workerd tests (worker/runs/*.test.ts) share: an app of its own per test
 * (storage is shared by every test file, so each test's runs live in shards nothing else
 * touches), runs whose id names a chosen shard, storage facts read inside the shard, and the
 * fakes fetchMock plays: the runtime host, the runs index and webhook receivers.
 */
import { env, fetchMock, runInDurableObject } from "cloudflare:test";
import type { RunView } from "../../common/protocol/run-view.ts";
import type { RunShard } from "./shard.ts";
import { newRunId, shardFor, shardName } from "./shards.ts";
import type { AppLimits, AppRequest, NewRun, WebhookRequest } from "./types.ts";

export const PROJECT = "prj_runs";
export const HOST = "http://host.test";
export const CONTROL = "http://control.test";
export const HOOKS = "https://hooks.test";
/** The Worker's origin, as the run route passes it: the host's callbacks go there. */
export const ORIGIN = "https://api.test";
/** Roomy limits: capacity 4 (a window of 2 hand-overs per shard), 10 minutes in the queue. */
/** The deployed app a test's cancel or redelivery comes from (its runs were accepted with none). */
export const APP_ID = "app_tests";
export const LIMITS: AppLimits = { capacity: 4, queueTimeout: 600 };

export type Shard = DurableObjectStub<RunShard>;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `probe` every 10 ms until it answers something (not undefined/false); bounded. */
export async function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  ms = 5_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The states each run's shard reported to the runs index, by run id; and the reports. */
const indexed = new Map<string, string[]>();
const indexReports = new Map<string, Array<Record<string, unknown>>>();
/** Batches the fake runs index still refuses (503) before it takes them again. */
let indexRefusals = 0;
/** Only the batches holding this run's report are refused, if set. */
let refusalsFor: string | undefined;

/**
 * The runs index answers the next `count` batches 503 (as a control plane restarting would): any
 * batch, or only those holding `runId`'s report. A late report of another test's run took one of
 * the refusals meant for the test's own, once on a busy machine.
 */
export function indexRefuses(count: number, runId?: string): void {
  indexRefusals = count;
  refusalsFor = runId;
}

/** How long the runs index takes to take a batch (a busy control plane): 0 by default. */
let indexDelayMs = 0;
export function indexTakes(ms: number): void {
  indexDelayMs = ms;
}

/** Every file's beforeAll: fetchMock on, no real network, the runs index taking reports. */
export function startFakes(): void {
  fetchMock.activate();
  fetchMock.disableNetConnect();
  fetchMock
    .get(CONTROL)
    .intercept({ path: "/internal/runs", method: "POST" })
    .reply(({ body }) => {
      if (indexRefusals > 0 && (!refusalsFor || String(body).includes(refusalsFor))) {
        indexRefusals--;
        return { statusCode: 503, data: '{"message":"restarting"}' };
      }
      const take = () => {
        const { runs } = JSON.parse(String(body)) as {
          runs: Array<{ id: string; status: string }>;
        };
        for (const report of runs) {
          const { id, status } = report;
          indexed.set(id, [...(indexed.get(id) ?? []), status]);
          indexReports.set(id, [...(indexReports.get(id) ?? []), report]);
        }
        return "{}";
      };
      const delay = indexDelayMs;
      if (delay === 0) return { statusCode: 200, data: take() };
      return { statusCode: 200, data: () => sleep(delay).then(take) };
    })
    .persist();
}

/** The latest report of `run` the runs index took, once `test` holds for it (bounded). */
export function lastReportOf(
  run: NewRun,
  what: string,
  test: (report: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  return until(`${run.runId}: ${what}`, () => {
    const last = indexReports.get(run.runId)?.at(-1);
    return last && test(last) ? last : undefined;
  });
}

/**
 * The ends (success, failure, cancelled) the runs index learned of `run`, each once, once one
 * came (bounded). Whether a `queued` or `running` report went first depends on how long the run
 * lived past a batch's 200 ms, which a loaded machine stretches; the end is what must arrive.
 */
export async function endsReported(run: NewRun): Promise<string[]> {
  const ends = () =>
    new Set((indexed.get(run.runId) ?? []).filter((s) => s !== "queued" && s !== "running"));
  await until(`the end of ${run.runId} reported`, () => ends().size > 0, 2_000).catch(
    () => undefined,
  );
  return [...ends()];
}

/** What the shard reported of `run` to the runs index, once `count` reports came (bounded). */
export async function reportsOf(run: NewRun, count: number): Promise<string[]> {
  const got = () => indexed.get(run.runId) ?? [];
  await until(`${count} report(s) of ${run.runId}`, () => got().length >= count, 2_000).catch(
    () => undefined,
  );
  if (count === 0) await sleep(50); // a report that should not come has had time to
  return got();
}

/** A new app: its shards hold only this test's runs. */
export function newApp(): string {
  return `app${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
}

/** A new run of `app` whose id names shard `k`. */
export function newRun(
  app: string,
  options: { k?: number; fn?: string; createdAt?: number } = {},
): NewRun {
  return {
    runId: `${newRunId().slice(0, -1)}${options.k ?? 0}`,
    project: PROJECT,
    app,
    fn: options.fn ?? "run",
    createdAt: options.createdAt ?? Date.now(),
  };
}

/** Shard `k` of `app`, by its name (not through shardFor, which is under test too). */
export function shardNamed(app: string, k = 0, project = PROJECT): Shard {
  const ns = env.RUNS as unknown as DurableObjectNamespace<RunShard>;
  return ns.get(ns.idFromName(shardName(project, app, k)));
}

/** The shard holding `run`, as the routes find it (shardFor). */
export const shardOfRun = (run: NewRun): Shard =>
  shardFor(env, run.project, run.app, run.runId) as unknown as Shard;

/** Queues `run` in its shard, as `POST …?async=true` does. */
export function accept(
  run: NewRun,
  options: {
    limits?: Partial<AppLimits>;
    webhook?: WebhookRequest;
    payload?: string;
    request?: AppRequest;
  } = {},
) {
  const payload = new TextEncoder().encode(options.payload ?? "{}").buffer as ArrayBuffer;
  const limits = { ...LIMITS, ...options.limits };
  return shardOfRun(run).accept(run, limits, ORIGIN, payload, options.webhook, options.request);
}

export const viewOf = (run: NewRun): Promise<RunView | null> => shardOfRun(run).view(run.runId);

/** The run's view once `test` holds (bounded). */
export function viewWhen(run: NewRun, what: string, test: (v: RunView) => boolean, ms?: number) {
  return until(
    `${run.runId}: ${what}`,
    async () => {
      const view = await viewOf(run);
      return view && test(view) ? view : undefined;
    },
    ms,
  );
}

export const statusIs = (run: NewRun, status: string, ms?: number) =>
  viewWhen(run, `status ${status}`, (v) => v.status === status, ms);

export const deliveryEnded = (run: NewRun, ms?: number) =>
  viewWhen(run, "its delivery ended", (v) => !!v.webhook && v.webhook.state !== "pending", ms);

/** Rows of a query run inside the shard (storage facts). */
export function sql<T = Record<string, SqlStorageValue>>(
  shard: Shard,
  query: string,
  ...bindings: SqlStorageValue[]
): Promise<T[]> {
  return runInDurableObject(
    shard,
    (_, state) => state.storage.sql.exec(query, ...bindings).toArray() as T[],
  );
}

export async function rowOf(run: NewRun): Promise<Record<string, SqlStorageValue> | undefined> {
  return (await sql(shardOfRun(run), "SELECT * FROM runs WHERE id = ?", run.runId))[0];
}

export const alarmOf = (shard: Shard): Promise<number | null> =>
  runInDurableObject(shard, (_, state) => state.storage.getAlarm());

/** Resets shard `k` of `app` as an eviction or a deploy does (rows and alarm stay): a new stub. */
export async function restart(app: string, k = 0, project = PROJECT): Promise<Shard> {
  const shard = shardNamed(app, k, project);
  await runInDurableObject(shard, (_, state) => state.abort("restart (test)")).catch(
    () => undefined, // the call that resets the object fails with it
  );
  return shardNamed(app, k, project);
}

/** Fills shard `k` of `app` with `count` queued runs (not dispatched: the shard is restarted). */
export async function fillQueue(app: string, k: number, count: number, project = PROJECT) {
  await sql(
    shardNamed(app, k, project),
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO runs (id, project, app, fn, async, status, created_at)
     SELECT printf('run_fill%018d', i), ?, ?, 'run', 1, 'queued', ? FROM n`,
    count,
    project,
    app,
    Date.now() + 1,
  );
  return restart(app, k, project); // counts its queue again
}

// ---- the runtime host ----------------------------------------------------------------------

/** A hand-over as the host received it. */
export interface HandOver {
  runId: string;
  method: string;
  path: string;
  headers: Headers;
  body: string;
  at: number;
}

/** A switch the test opens: a hand-over held by the host until then. */
export class Gate {
  opened = false;
  open = () => {
    this.opened = true;
  };
}

/** The host's answer to a hand-over: status, JSON body, held `hold` ms or until a gate opens. */
export interface HostReply {
  status: number;
  body?: unknown;
  hold?: number | Gate;
}

export const started = (deadlineAt = Date.now() + 900_000): HostReply => ({
  status: 202,
  body: { status: "running", startedAt: Date.now(), deadlineAt },
});

export const ended = (end: Record<string, unknown> = {}): HostReply => ({
  status: 200,
  body: {
    status: "success",
    result: { ok: 1 },
    runTimeMs: 3,
    startedAt: Date.now() - 5,
    finishedAt: Date.now(),
    ...end,
  },
});

export const busy: HostReply = { status: 429, body: { message: "app is at capacity" } };

export class FakeHost {
  readonly handOvers: HandOver[] = [];
  /** Hand-overs received and not answered yet, and the most there were at once. */
  open = 0;
  maxOpen = 0;
  count = (run: NewRun) => this.handOvers.filter((h) => h.runId === run.runId).length;
  order = () => this.handOvers.map((h) => h.runId);
}

/**
 * The host's hand-over routes for `app` (managed and custom); `answer` decides each one. `at`:
 * the host's origin (the configured host's by default).
 */
export function fakeHost(
  app: string,
  answer: (h: HandOver) => HostReply = () => started(),
  at = HOST,
) {
  const host = new FakeHost();
  const prefixes = [
    `/internal/async/${PROJECT}/${app}/`,
    `/internal/async-http/${PROJECT}/${app}/`,
  ];
  fetchMock
    .get(at)
    .intercept({ path: (p) => prefixes.some((x) => p.startsWith(x)), method: () => true })
    .reply((opts) => {
      const headers = new Headers(opts.headers as HeadersInit);
      const handOver: HandOver = {
        runId: headers.get("x-runlet-run-id") ?? "",
        method: opts.method,
        path: opts.path,
        headers,
        body: String(opts.body ?? ""),
        at: Date.now(),
      };
      host.handOvers.push(handOver);
      host.maxOpen = Math.max(host.maxOpen, ++host.open);
      const reply = answer(handOver);
      const data = async () => {
        // Polled from the shard's own context (a promise settled by the test would not be).
        if (typeof reply.hold === "number") await sleep(reply.hold);
        while (reply.hold instanceof Gate && !reply.hold.opened) await sleep(10);
        host.open--;
        return JSON.stringify(reply.body ?? {});
      };
      return { statusCode: reply.status, data: data as unknown as string };
    })
    .persist();
  return host;
}

/**
 * Answers of the host's `GET /internal/runs/{id}` (the watchdog's question, with the internal
 * token), in turn: a status is an error answer, "error" no answer, an object the run's state.
 */
export function hostRunStates(run: NewRun, answers: Array<number | "error" | object>) {
  const path = `/internal/runs/${run.runId}`;
  const headers = { authorization: `Bearer ${env.INTERNAL_TOKEN}` };
  for (const answer of answers) {
    const scope = fetchMock.get(HOST).intercept({ path, method: "GET", headers });
    if (answer === "error") scope.replyWithError(new Error("connection refused"));
    else if (typeof answer === "number") scope.reply(answer, { message: `host says ${answer}` });
    else scope.reply(200, JSON.stringify(answer));
  }
  const pending = () =>
    fetchMock.pendingInterceptors().filter((i) => i.path === path && i.method === "GET").length;
  /** How many of the answers were given so far. */
  return { asked: () => answers.length - pending() };
}

// ---- webhook receivers ---------------------------------------------------------------------

/** The signature a receiver expects (docs/api.md, "Webhook delivery"), computed here with WebCrypto. */
export async function hmacHex(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)));
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
}

export interface Received {
  headers: Headers;
  body: string;
  at: number;
}

/**
 * A receiver at `HOOKS{path}` answering `statuses` in turn ("error": a network error, "slow": a
 * 200 after the attempt's timeout). Records what it received.
 */
export function receiver(path: string, statuses: Array<number | "error" | "slow">): Received[] {
  const received: Received[] = [];
  for (const status of statuses) {
    const scope = fetchMock.get(HOOKS).intercept({ path, method: "POST" });
    if (status === "error") {
      scope.replyWithError(new Error("connection refused"));
      continue;
    }
    const reply = scope.reply((opts) => {
      const headers = new Headers(opts.headers as HeadersInit);
      received.push({ headers, body: String(opts.body), at: Date.now() });
      return {
        statusCode: status === "slow" ? 200 : status,
        data: "",
        responseOptions: status === 302 ? { headers: { location: `${HOOKS}/moved` } } : {},
      };
    });
    if (status === "slow") reply.delay(Number(env.WEBHOOK_TIMEOUT_MS) + 300);
  }
  return received;
}
