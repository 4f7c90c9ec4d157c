CREATE TABLE `audit_log` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`timestamp` integer NOT NULL,
	`action` text NOT NULL,
	`actor_type` text NOT NULL,
	`actor_id` text NOT NULL,
	`actor_name` text NOT NULL,
	`outcome` text NOT NULL,
	`target_type` text NOT NULL,
	`target_id` text NOT NULL,
	`request_id` text NOT NULL,
	`ip` text,
	`user_agent` text,
	`metadata` text NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `audit_time` ON `audit_log` (`project_id`,`timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `audit_action` ON `audit_log` (`project_id`,`action`,`timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `audit_actor` ON `audit_log` (`project_id`,`actor_id`,`timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `audit_outcome` ON `audit_log` (`project_id`,`outcome`,`timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `audit_action_actor` ON `audit_log` (`project_id`,`action`,`actor_id`,`timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `audit_action_outcome` ON `audit_log` (`project_id`,`action`,`outcome`,`timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `audit_actor_outcome` ON `audit_log` (`project_id`,`actor_id`,`outcome`,`timestamp`,`id`);--> statement-breakpoint
CREATE INDEX `audit_all` ON `audit_log` (`project_id`,`action`,`actor_id`,`outcome`,`timestamp`,`id`);--> statement-breakpoint
CREATE TABLE `runs` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`app` text NOT NULL,
	`fn` text NOT NULL,
	`async` integer NOT NULL,
	`status` text NOT NULL,
	`created_at` integer NOT NULL,
	`finished_at` integer,
	`run_time_ms` real,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `runs_project_time` ON `runs` (`project_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `runs_project_app_time` ON `runs` (`project_id`,`app`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `secrets` (
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`sealed` text NOT NULL,
	`updated_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`project_id`, `name`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `service_accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`role` text NOT NULL,
	`token_id` text NOT NULL,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`token_id`) REFERENCES `tokens`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `service_accounts_project` ON `service_accounts` (`project_id`,`created_at`);