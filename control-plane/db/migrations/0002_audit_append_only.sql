-- The audit log is append-only, enforced by the database itself: no UPDATE ever, and DELETE only
-- of entries older than the longest retention window (365 days, the enterprise plan): the purge.
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
