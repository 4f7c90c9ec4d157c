/** Every action the audit log records: `<resource>.<verb>`, a closed list. */
export const AUDIT_ACTIONS = [
  "projects.create",
  "projects.update",
  "service_accounts.create",
  "service_accounts.revoke",
  "secrets.write",
  "secrets.read",
  "apps.deploy",
  "audit_log.read",
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const OUTCOMES = ["success", "failure"] as const;

export type Outcome = (typeof OUTCOMES)[number];

/** What an action was done to: `{type: "secret", id: "DB_URL"}`. */
export interface AuditTarget {
  type: string;
  id: string;
}
