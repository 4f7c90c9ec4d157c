CREATE TABLE `host_apps` (
	`host_id` text NOT NULL,
	`project_id` text NOT NULL,
	`app` text NOT NULL,
	`version` integer NOT NULL,
	`replicas` integer NOT NULL,
	`ready` integer NOT NULL,
	`busy` integer NOT NULL,
	PRIMARY KEY(`host_id`, `project_id`, `app`),
	FOREIGN KEY (`host_id`) REFERENCES `hosts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `host_apps_app` ON `host_apps` (`project_id`,`app`);--> statement-breakpoint
CREATE TABLE `host_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`token_hash` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `host_tokens_token_hash_unique` ON `host_tokens` (`token_hash`);--> statement-breakpoint
CREATE TABLE `hosts` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`address` text NOT NULL,
	`token_id` text NOT NULL,
	`slots` integer NOT NULL,
	`memory_mb` integer NOT NULL,
	`state` text NOT NULL,
	`registered_at` integer NOT NULL,
	`seen_at` integer NOT NULL,
	`busy` integer DEFAULT 0 NOT NULL,
	`queued` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`token_id`) REFERENCES `host_tokens`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `hosts_address_unique` ON `hosts` (`address`);--> statement-breakpoint
CREATE INDEX `hosts_seen` ON `hosts` (`seen_at`);--> statement-breakpoint
ALTER TABLE `users` ADD `operator` integer DEFAULT false NOT NULL;