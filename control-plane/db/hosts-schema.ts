/**
 * The registry of runtime hosts (docs/hosts.md): the tokens a host joins with (only their
 * hash), the hosts that registered, and what each last said it runs. Re-exported by schema.ts.
 */
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { REGISTRY_STATES } from "../../common/protocol/hosts.ts";

/** A host token (`runlet hosts token`): its SHA-256 (hex), never the token. */
export const hostTokens = sqliteTable("host_tokens", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  tokenHash: text("token_hash").notNull().unique(),
  createdBy: text("created_by").notNull(),
  createdAt: integer("created_at").notNull(),
  revokedAt: integer("revoked_at"),
});

/** A runtime host, by the address the Worker reaches it at; `down` is derived from `seenAt`. */
export const hosts = sqliteTable(
  "hosts",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    address: text("address").notNull().unique(),
    tokenId: text("token_id")
      .notNull()
      .references(() => hostTokens.id),
    /** Replicas it runs at once, and its memory for them. */
    slots: integer("slots").notNull(),
    memoryMb: integer("memory_mb").notNull(),
    /**
     * What it last said: `up`, or `draining` once it stops; `drained` while an operator has it
     * drained (its heartbeats do not change that); `stopped` once it said it left (its work
     * ended, its replicas stopped: docs/hosts.md).
     */
    state: text("state", { enum: REGISTRY_STATES }).notNull(),
    registeredAt: integer("registered_at").notNull(),
    /** Its last heartbeat (or registration). */
    seenAt: integer("seen_at").notNull(),
    /**
     * Since when it has been up without a pause: its registration, or its first heartbeat after
     * it was down. Of two hosts that run more of an app than its `max_replicas`, the one up since
     * later keeps fewer (hosts/heartbeat.ts).
     */
    upSince: integer("up_since").notNull().default(0),
    busy: integer("busy").notNull().default(0),
    queued: integer("queued").notNull().default(0),
    /**
     * When the Worker last could not connect to it at its address, and why
     * (`POST /internal/hosts/{id}/unreachable`): placement passes it over for `UNREACHABLE_MS`
     * after, or until it registers again. Null: no such report.
     */
    unreachableAt: integer("unreachable_at"),
    unreachableError: text("unreachable_error"),
  },
  (t) => [index("hosts_seen").on(t.seenAt)],
);

/**
 * What a host runs of an app, as its last heartbeat said — plus the replicas it was granted
 * since (`POST /internal/hosts/{id}/replicas`), so an app's `max_replicas` holds across hosts.
 */
export const hostApps = sqliteTable(
  "host_apps",
  {
    hostId: text("host_id")
      .notNull()
      .references(() => hosts.id),
    projectId: text("project_id").notNull(),
    app: text("app").notNull(),
    version: integer("version").notNull(),
    replicas: integer("replicas").notNull(),
    ready: integer("ready").notNull(),
    busy: integer("busy").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.hostId, t.projectId, t.app] }),
    index("host_apps_app").on(t.projectId, t.app),
  ],
);
