CREATE TABLE `sign_in_links` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`subject` text NOT NULL,
	`token_id` text NOT NULL,
	`project_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	FOREIGN KEY (`token_id`) REFERENCES `tokens`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `runs` ADD `webhook_state` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `webhook_attempts` integer;--> statement-breakpoint
ALTER TABLE `tokens` ADD `parent_id` text;--> statement-breakpoint
ALTER TABLE `tokens` ADD `last_used_at` integer;