/**
 * The control plane's tables (SQLite dialect: libSQL under Node, D1 under Workers).
 * Timestamps are Unix milliseconds. Migrations: `npm run db:generate` writes them to ./migrations.
 */
import {
  index,
  integer,
  primaryKey,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: integer("created_at").notNull(),
});

export const projects = sqliteTable("projects", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  plan: text("plan", { enum: ["hobby", "pro", "enterprise"] })
    .notNull()
    .default("hobby"),
  createdAt: integer("created_at").notNull(),
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
  },
  (t) => [index("tokens_subject").on(t.subject)],
);

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
    deployedBy: text("deployed_by").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("deployments_app_version").on(t.appId, t.version)],
);
