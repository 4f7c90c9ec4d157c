-- The audit log with integer index keys (see auditLog in schema.ts): a rowid `seq` as the
-- tie-break, project and actor as subjectKey hashes (control-plane/audit/keys.ts, computed here in
-- SQL for the entries already written), action and outcome as codes (AUDIT_ACTION_CODES), and four
-- indexes instead of eight. Entries keep their ids, times and order (seq follows the old
-- (timestamp, id) order). Dropping the old table drops its triggers; they are created again below.
CREATE TABLE `__new_audit_log` (
	`seq` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`project_id` text NOT NULL,
	`project_key` integer NOT NULL,
	`timestamp` integer NOT NULL,
	`action` integer NOT NULL,
	`actor_type` text NOT NULL,
	`actor_id` text NOT NULL,
	`actor_key` integer NOT NULL,
	`actor_name` text NOT NULL,
	`outcome` integer NOT NULL,
	`target_type` text NOT NULL,
	`target_id` text NOT NULL,
	`request_id` text NOT NULL,
	`ip` text,
	`user_agent` text,
	`metadata` text NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `__audit_keys` (`s` text PRIMARY KEY NOT NULL, `k` integer NOT NULL);
--> statement-breakpoint
INSERT INTO `__audit_keys` (`s`, `k`)
WITH RECURSIVE
  `ids`(`s`) AS (SELECT `project_id` FROM `audit_log` UNION SELECT `actor_id` FROM `audit_log`),
  `h`(`s`, `i`, `k`) AS (
    SELECT `s`, 1, 0 FROM `ids`
    UNION ALL
    SELECT `s`, `i` + 1, (`k` * 31 + unicode(substr(`s`, `i`, 1))) % 281474976710597
    FROM `h` WHERE `i` <= length(`s`)
  )
SELECT `s`, `k` FROM `h` WHERE `i` = length(`s`) + 1;
--> statement-breakpoint
INSERT INTO `__new_audit_log` ("seq", "id", "project_id", "project_key", "timestamp", "action", "actor_type", "actor_id", "actor_key", "actor_name", "outcome", "target_type", "target_id", "request_id", "ip", "user_agent", "metadata")
SELECT
  row_number() OVER (ORDER BY `timestamp`, `id`), `id`, `project_id`,
  (SELECT `k` FROM `__audit_keys` WHERE `s` = `project_id`), `timestamp`,
  CASE `action` WHEN 'projects.create' THEN 1 WHEN 'projects.update' THEN 2 WHEN 'service_accounts.create' THEN 3 WHEN 'service_accounts.revoke' THEN 4 WHEN 'secrets.write' THEN 5 WHEN 'secrets.read' THEN 6 WHEN 'apps.deploy' THEN 7 WHEN 'audit_log.read' THEN 8 END,
  `actor_type`, `actor_id`, (SELECT `k` FROM `__audit_keys` WHERE `s` = `actor_id`), `actor_name`,
  CASE `outcome` WHEN 'success' THEN 0 WHEN 'failure' THEN 1 END,
  `target_type`, `target_id`, `request_id`, `ip`, `user_agent`, `metadata`
FROM `audit_log`;
--> statement-breakpoint
DROP TABLE `__audit_keys`;--> statement-breakpoint
DROP TABLE `audit_log`;--> statement-breakpoint
ALTER TABLE `__new_audit_log` RENAME TO `audit_log`;--> statement-breakpoint
CREATE INDEX `audit_time` ON `audit_log` (`project_key`,`outcome`,`timestamp`);--> statement-breakpoint
CREATE INDEX `audit_action` ON `audit_log` (`project_key`,`action`,`outcome`,`timestamp`);--> statement-breakpoint
CREATE INDEX `audit_actor` ON `audit_log` (`project_key`,`actor_key`,`outcome`,`timestamp`);--> statement-breakpoint
CREATE INDEX `audit_action_actor` ON `audit_log` (`project_key`,`action`,`actor_key`,`outcome`,`timestamp`);--> statement-breakpoint
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
  SELECT RAISE(ABORT, 'audit_log is append-only');
END;
--> statement-breakpoint
CREATE TRIGGER audit_log_delete_only_expired BEFORE DELETE ON audit_log
WHEN OLD.timestamp > (CAST(strftime('%s', 'now') AS INTEGER) - 365 * 86400) * 1000
BEGIN
  SELECT RAISE(ABORT, 'audit_log entries are kept for 365 days');
END;
