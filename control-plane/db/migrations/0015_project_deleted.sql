-- A deleted project (DELETE /v2/projects/{id}) keeps its row, marked: its audit entries and runs
-- still name a project, and every route answers 404 for it.
ALTER TABLE `projects` ADD `deleted_at` integer;--> statement-breakpoint
ALTER TABLE `projects` ADD `deleted_by` text;--> statement-breakpoint
-- A deploy that began before its project was deleted (its start check takes seconds) cannot
-- make an app in it afterwards: its batch fails, and the deploy is answered 404.
CREATE TRIGGER apps_not_in_deleted_project BEFORE INSERT ON apps
WHEN (SELECT deleted_at FROM projects WHERE id = NEW.project_id) IS NOT NULL
BEGIN
  SELECT RAISE(ABORT, 'runlet: the project was deleted');
END;
