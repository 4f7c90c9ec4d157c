/**
 * The control plane's tables (SQLite dialect: libSQL under Node, D1 under Workers).
 * Timestamps are Unix milliseconds. Migrations: `npm run db:generate` writes them to ./migrations.
 */

import { sql } from "drizzle-orm";
import {
  customType,
  index,
  integer,
  primaryKey,
  real,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";
import { RUN_STATUSES, WEBHOOK_STATES } from "../../common/protocol/runs.ts";
import {
  AUDIT_ACTION_CODES,
  type AuditAction,
  OUTCOME_CODES,
  type Outcome,
} from "../audit/actions.ts";

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: integer("created_at").notNull(),
  /** Runs the installation: sees and admits its runtime hosts (docs/hosts.md). */
  operator: integer("operator", { mode: "boolean" }).notNull().default(false),
});

export const projects = sqliteTable("projects", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  plan: text("plan", { enum: ["hobby", "pro", "enterprise"] })
    .notNull()
    .default("hobby"),
  createdAt: integer("created_at").notNull(),
  /**
   * Raised by every change of the project's secrets, in the same write: a runtime host hears it
   * in its heartbeat's answer and replaces the replicas started with an earlier one.
   */
  secretsRevision: integer("secrets_revision").notNull().default(0),
  /**
   * When the project was deleted (`DELETE /v2/projects/{id}`), and by whom: the row stays, so
   * its audit entries and runs still name a project, but every route answers 404 for it.
   */
  deletedAt: integer("deleted_at"),
  deletedBy: text("deleted_by"),
});

export const memberships = sqliteTable(
  "memberships",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    role: text("role", { enum: ["owner", "member"] }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.userId] }), index("memberships_user").on(t.userId)],
);

/**
 * Every token ever issued, by its JWT id. The token itself is never stored: a JWT is checked by
 * its signature, and this row says whether it was revoked.
 */
export const tokens = sqliteTable(
  "tokens",
  {
    id: text("id").primaryKey(),
    subject: text("subject").notNull(),
    projectId: text("project_id").references(() => projects.id),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    revokedAt: integer("revoked_at"),
    /**
     * A dashboard session's token: the token its holder signed in with. Revoking that one (or
     * its service account) ends the session too.
     */
    parentId: text("parent_id"),
    /** When the token last authenticated a control-plane request (to the minute). */
    lastUsedAt: integer("last_used_at"),
  },
  (t) => [index("tokens_subject").on(t.subject)],
);

/**
 * One-time dashboard sign-in links (`runlet dashboard`): only the code's hash is kept. A link
 * signs its holder in as `subject` in `projectId`, with a session made from `tokenId` (the token
 * that asked for the link), once, before `expiresAt`.
 */
export const signInLinks = sqliteTable("sign_in_links", {
  codeHash: text("code_hash").primaryKey(),
  subject: text("subject").notNull(),
  tokenId: text("token_id")
    .notNull()
    .references(() => tokens.id),
  projectId: text("project_id")
    .notNull()
    .references(() => projects.id),
  createdAt: integer("created_at").notNull(),
  expiresAt: integer("expires_at").notNull(),
  usedAt: integer("used_at"),
});

export const apps = sqliteTable(
  "apps",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    name: text("name").notNull(),
    runtime: text("runtime", { enum: ["managed", "custom"] }).notNull(),
    currentVersion: integer("current_version").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [uniqueIndex("apps_project_name").on(t.projectId, t.name)],
);

export const deployments = sqliteTable(
  "deployments",
  {
    id: text("id").primaryKey(),
    appId: text("app_id")
      .notNull()
      .references(() => apps.id),
    version: integer("version").notNull(),
    /** The parsed runlet.toml, as JSON. */
    config: text("config", { mode: "json" }).notNull(),
    files: integer("files").notNull(),
    bytes: integer("bytes").notNull(),
    /** What identifies its files (common/bundle-digest.ts); a host checks what it fetches. */
    digest: text("digest"),
    /**
     * A managed version's functions, as its deploy's start check found them (JSON array); null
     * when not known: a custom app, a deploy without the check, or one before 2026-11-27.
     */
    exports: text("exports", { mode: "json" }).$type<string[]>(),
    /** A rollback's: the version whose files it deployed again (null: a deploy of its own). */
    rolledBackFrom: integer("rolled_back_from"),
    deployedBy: text("deployed_by").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("deployments_app_version").on(t.appId, t.version)],
);

/** A project's non-human member: its token is a JWT whose id is `tokenId` (never stored itself). */
export const serviceAccounts = sqliteTable(
  "service_accounts",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    name: text("name").notNull(),
    role: text("role", { enum: ["owner", "member", "caller"] }).notNull(),
    tokenId: text("token_id")
      .notNull()
      .references(() => tokens.id),
    createdBy: text("created_by").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    revokedAt: integer("revoked_at"),
  },
  (t) => [index("service_accounts_project").on(t.projectId, t.createdAt)],
);

/** Project secrets, encrypted at rest (AES-GCM; the key is the control plane's, not the DB's). */
export const secrets = sqliteTable(
  "secrets",
  {
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    name: text("name").notNull(),
    /** base64url of iv (12 bytes) + ciphertext, bound to project and name as additional data. */
    sealed: text("sealed").notNull(),
    updatedBy: text("updated_by").notNull(),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.name] })],
);

/** One row per run, sync or async, for `GET /v2/projects/{id}/runs`. */
export const runs = sqliteTable(
  "runs",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    app: text("app").notNull(),
    fn: text("fn").notNull(),
    async: integer("async", { mode: "boolean" }).notNull(),
    status: text("status", { enum: RUN_STATUSES }).notNull(),
    createdAt: integer("created_at").notNull(),
    finishedAt: integer("finished_at"),
    runTimeMs: real("run_time_ms"),
    /** The runtime host that ran it, by its registry id, when known. */
    host: text("host"),
    /** Why a failed run failed: the message its caller got (at most 1,000 characters). */
    error: text("error"),
    /** A custom app's run: the HTTP status the app answered; a function's own status_code. */
    statusCode: integer("status_code"),
    /** The run's webhook delivery, if it had one: its state and the attempts made so far. */
    webhookState: text("webhook_state", { enum: WEBHOOK_STATES }),
    webhookAttempts: integer("webhook_attempts"),
  },
  (t) => [
    index("runs_project_time").on(t.projectId, t.createdAt, t.id),
    index("runs_project_app_time").on(t.projectId, t.app, t.createdAt, t.id),
    // The async runs not ended yet, and only those: an app's queue is counted from it
    // (runs/unfinished.ts) without reading the app's other runs.
    index("runs_unfinished")
      .on(t.projectId, t.app, t.status, t.createdAt)
      .where(sql`async = 1 and status in ('queued', 'running')`),
  ],
);

/** An action, stored as its permanent code (AUDIT_ACTION_CODES). */
const auditAction = customType<{ data: AuditAction; driverData: number }>({
  dataType: () => "integer",
  toDriver: (action) => AUDIT_ACTION_CODES[action],
  fromDriver: (code) => ACTION_OF_CODE.get(code) ?? (`unknown.${code}` as AuditAction),
});
const ACTION_OF_CODE = new Map(
  Object.entries(AUDIT_ACTION_CODES).map(([action, code]) => [code, action as AuditAction]),
);

/** An outcome, stored as 0 (success) or 1 (failure). */
const auditOutcome = customType<{ data: Outcome; driverData: number }>({
  dataType: () => "integer",
  toDriver: (outcome) => OUTCOME_CODES[outcome],
  fromDriver: (code) => (code === OUTCOME_CODES.failure ? "failure" : "success"),
});

/**
 * The audit trail. Append-only: triggers in the migrations refuse UPDATE, and DELETE unless the
 * row is older than the longest retention window (365 days), which is the purge.
 *
 * `seq` (the rowid) is the order entries were written: the tie-break between entries of the
 * same millisecond, and part of every index at no cost. Indexes hold integers only: the
 * project and actor as `subjectKey` hashes (queries compare the ids too), action and outcome as
 * codes. One index per combination of action and actor, each ending in (outcome, timestamp):
 * a page with an outcome filter is one range scan in the order it is served; without one it is
 * two (one per outcome) merged — half the indexes of one per combination, which is what an
 * insert pays for.
 */
export const auditLog = sqliteTable(
  "audit_log",
  {
    seq: integer("seq").primaryKey(),
    /** The entry's public id (`log_…`); never looked up, so not indexed. */
    id: text("id").notNull(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id),
    projectKey: integer("project_key").notNull(),
    /** Unix milliseconds. */
    timestamp: integer("timestamp").notNull(),
    action: auditAction("action").notNull(),
    actorType: text("actor_type", { enum: ["user", "service_account"] }).notNull(),
    actorId: text("actor_id").notNull(),
    actorKey: integer("actor_key").notNull(),
    actorName: text("actor_name").notNull(),
    outcome: auditOutcome("outcome").notNull(),
    targetType: text("target_type").notNull(),
    targetId: text("target_id").notNull(),
    requestId: text("request_id").notNull(),
    ip: text("ip"),
    userAgent: text("user_agent"),
    metadata: text("metadata", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
  },
  (t) => [
    index("audit_time").on(t.projectKey, t.outcome, t.timestamp),
    index("audit_action").on(t.projectKey, t.action, t.outcome, t.timestamp),
    index("audit_actor").on(t.projectKey, t.actorKey, t.outcome, t.timestamp),
    index("audit_action_actor").on(t.projectKey, t.action, t.actorKey, t.outcome, t.timestamp),
  ],
);

export * from "./hosts-schema.ts";
