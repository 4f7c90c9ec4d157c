-- The Worker's word that it could not connect to a host at its address (docs/hosts.md, Placement):
-- placement passes the host over for a minute after, or until it registers again.
ALTER TABLE `hosts` ADD `unreachable_at` integer;--> statement-breakpoint
ALTER TABLE `hosts` ADD `unreachable_error` text;