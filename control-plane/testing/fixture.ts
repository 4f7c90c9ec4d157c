/**
 * A control plane over a given (already migrated) database, with people and tokens to call it.
 * Runtime-agnostic: the Node tests hand it a libSQL file, the Workers tests a D1 binding, and
 * the same test cases run against both.
 */
import { eq } from "drizzle-orm";
import { newId } from "../../common/ids.ts";
import { generateSigningKey } from "../../common/jwt.ts";
import { type ControlPlaneApp, createControlPlane } from "../app.ts";
import { deriveKeys } from "../auth/secret-keys.ts";
import { signingKeysFrom } from "../auth/signing.ts";
import { issueToken, publicKeysOf } from "../auth/tokens.ts";
import { type BundleStore, namesUpTo } from "../bundles.ts";
import type { Deps } from "../context.ts";
import type { Database } from "../db/index.ts";
import { memberships, projects, users } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import type { RuntimeHosts } from "../host-client.ts";
import type { Plan } from "../plans.ts";

const YEAR_MS = 365 * 86_400_000;

/** The internal token of the fixture's control plane (for `/internal/*` routes). */
export const INTERNAL_TOKEN = "fixture-internal-token-0123456789abcdef";

export interface Person {
  id: string;
  name: string;
  token: string;
}

export interface Fixture {
  app: ControlPlaneApp;
  db: Database;
  deps: Deps;
  /** A project `owner` owns and `member` belongs to; `outsider` has a project of their own. */
  projectId: string;
  owner: Person;
  member: Person;
  outsider: Person;
  outsiderProjectId: string;
  /** Calls the app in-process: `path` is absolute (`/v2/...`), JSON bodies are serialized. */
  call(
    method: string,
    path: string,
    opts?: { token?: string | null; body?: unknown; headers?: Record<string, string> },
  ): Promise<Response>;
  /** A new project with `owner` as its owner. */
  addProject(plan?: Plan): Promise<string>;
}

/**
 * Runtime hosts for tests that never reach one: every version starts (on a host of no address,
 * where nothing runs), and no host answers anything else.
 */
export const noRuntimeHosts: RuntimeHosts = {
  start: () => Promise.resolve({ state: "started", host: "hst_fixture", ms: 0 }),
  announce: () => Promise.resolve(),
  remove: () => Promise.resolve(),
  secretsChanged: () => Promise.resolve(),
  runLogs() {
    return Promise.reject(new ApiError("bad_gateway", "no runtime host in this test"));
  },
  replicas: () => Promise.resolve(undefined),
  output: () => Promise.resolve({ replicas: [], unreachable: 0 }),
};

/** Bundles kept in memory, as the file and R2 stores keep them. */
export function memoryBundles(): BundleStore & { kept: Map<string, string> } {
  const kept = new Map<string, string>();
  const key = (k: { project: string; app: string; version: number; digest?: string | null }) =>
    `${k.project}/${k.app}/v${k.version}${k.digest ? `-${k.digest}` : ""}`;
  return {
    kept,
    put: async (k, bundle) => void kept.set(key(k), JSON.stringify(bundle)),
    get: async (k) => kept.get(key(k)),
    forget: async (k) => void kept.delete(key(k)),
    forgetUpTo: async (project, app, version) => {
      const prefix = `${project}/${app}/`;
      const names = [...kept.keys()].filter((name) => name.startsWith(prefix));
      const tails = names.map((name) => `${name.slice(prefix.length)}.json`);
      for (const tail of namesUpTo(tails, version)) kept.delete(prefix + tail.slice(0, -5));
    },
    remove: async (project, app) => {
      for (const name of kept.keys()) if (name.startsWith(`${project}/${app}/`)) kept.delete(name);
    },
  };
}

/** What a test's control plane is given over `db`: fresh keys, no host, bundles in memory. */
export async function fixtureDeps(
  db: Database,
  opts: { hosts?: RuntimeHosts; bundles?: BundleStore } = {},
): Promise<Deps> {
  const keys = await signingKeysFrom(await generateSigningKey());
  return {
    db,
    keys,
    publicKeys: await publicKeysOf(keys),
    derived: await deriveKeys(crypto.getRandomValues(new Uint8Array(32))),
    hosts: opts.hosts ?? noRuntimeHosts,
    bundles: opts.bundles ?? memoryBundles(),
    clientIp: () => "203.0.113.7",
    internalToken: INTERNAL_TOKEN,
  };
}

export async function createFixture(
  db: Database,
  opts: { hosts?: RuntimeHosts; bundles?: BundleStore; plan?: Plan } = {},
): Promise<Fixture> {
  const deps = await fixtureDeps(db, opts);
  const { keys } = deps;
  const app = createControlPlane(deps);
  const now = Date.now();

  const person = async (name: string): Promise<Person> => {
    const id = newId("usr");
    await db.insert(users).values({ id, name, createdAt: now });
    const { token } = await issueToken(db, keys, {
      subject: id,
      expiresAt: new Date(now + YEAR_MS),
    });
    return { id, name, token };
  };
  const owner = await person("Olive Owner");
  const member = await person("Mel Member");
  const outsider = await person("Otto Outsider");

  const project = async (ownerId: string, plan: Plan) => {
    const id = newId("prj");
    await db.batch([
      db.insert(projects).values({ id, name: `p-${id.slice(-6)}`, plan, createdAt: now }),
      db.insert(memberships).values({ projectId: id, userId: ownerId, role: "owner" }),
    ]);
    return id;
  };
  const projectId = await project(owner.id, opts.plan ?? "hobby");
  await db.insert(memberships).values({ projectId, userId: member.id, role: "member" });
  const outsiderProjectId = await project(outsider.id, "hobby");

  return {
    app,
    db,
    deps,
    projectId,
    owner,
    member,
    outsider,
    outsiderProjectId,
    addProject: (plan = "hobby") => project(owner.id, plan),
    call(method, path, { token = owner.token, body, headers = {} } = {}) {
      const init: RequestInit = { method, headers: { "user-agent": "runlet-tests", ...headers } };
      const h = init.headers as Record<string, string>;
      if (token !== null) h.authorization = `Bearer ${token}`;
      if (body !== undefined) {
        h["content-type"] ??= "application/json";
        init.body = typeof body === "string" ? body : JSON.stringify(body);
      }
      return Promise.resolve(app.request(path, init));
    },
  };
}

/** A deploy's files as the API takes them (`{files}`' items), from `{path: text}`. */
export function bundleFiles(files: Record<string, string>) {
  return Object.entries(files).map(([path, text]) => ({
    path,
    contentBase64: Buffer.from(text).toString("base64"),
  }));
}

/**
 * The host token `name`, made by the fixture's owner made an operator first (who may see and
 * admit this Runlet's hosts): what a host test registers its hosts with.
 */
export async function operatorHostToken(
  f: Fixture,
  name: string,
): Promise<{ id: string; token: string }> {
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  const res = await f.call("POST", "/v2/hosts/tokens", { body: { name } });
  if (res.status !== 201) throw new Error(`host token: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; token: string };
}

/** Registers a runtime host at `address` with the host token `token`: its registry id. */
export async function registerHost(f: Fixture, token: string, address: string): Promise<string> {
  const res = await f.call("POST", "/internal/hosts", {
    token,
    body: { name: address, address, slots: 8, memoryMb: 4096 },
  });
  if (res.status !== 200) throw new Error(`register: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { hostId: string }).hostId;
}
