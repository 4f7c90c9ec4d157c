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
  "apps.delete",
  "audit_log.export",
  "secrets.delete",
  "users.create",
  "users.add",
  "users.set_role",
  "users.remove",
  "users.issue_token",
  "users.revoke_token",
  "projects.delete",
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * How the audit table stores each action: a small integer keeps its indexes small. Codes are
 * permanent — a new action gets the next unused number; none is ever reused or renumbered
 * (migration 0003 spells out the same mapping for the entries written before it).
 */
export const AUDIT_ACTION_CODES: Record<AuditAction, number> = {
  "projects.create": 1,
  "projects.update": 2,
  "service_accounts.create": 3,
  "service_accounts.revoke": 4,
  "secrets.write": 5,
  "secrets.read": 6,
  "apps.deploy": 7,
  "audit_log.read": 8,
  "apps.delete": 9,
  "audit_log.export": 10,
  "secrets.delete": 11,
  "users.create": 12,
  "users.add": 13,
  "users.set_role": 14,
  "users.remove": 15,
  "users.issue_token": 16,
  "users.revoke_token": 17,
  "projects.delete": 18,
};

export const OUTCOMES = ["success", "failure"] as const;

export type Outcome = (typeof OUTCOMES)[number];

/** How the audit table stores an outcome. */
export const OUTCOME_CODES: Record<Outcome, number> = { success: 0, failure: 1 };

/** What an action was done to: `{type: "secret", id: "DB_URL"}`. */
export interface AuditTarget {
  type: string;
  id: string;
}
