// The CLI's words for a 404 of the project it works in, once that project was deleted: where it
// took the id from (local.json here; RUNLET_PROJECT in cli/commands/projects.test.ts, against a
// real control plane) and what to do. Any other 404 keeps the server's words.
import { expect, it } from "vitest";
import { CliError } from "./command.ts";
import { deletedProject } from "./deleted-project.ts";

const said = "project 'prj_1' was deleted: pick another (GET /v2/projects, …)";
const refusal = new CliError(`listing apps failed (404): ${said}`, { status: 404 }, said);
const fromFile = { projectId: "prj_1", projectFrom: "projectId of /home/me/.runlet/local.json" };

it("names local.json as where the id came from, and how to work in another project", () => {
  expect(
    deletedProject(fromFile, "/v2/projects/prj_1/apps", "listing apps", refusal)?.message,
  ).toBe(
    "listing apps failed (404): project prj_1 was deleted: the CLI works in it (projectId of /home/me/.runlet/local.json). To work in another, set RUNLET_PROJECT to another's id, or write it as the projectId of /home/me/.runlet/local.json (npx runlet projects lists yours; npx runlet projects create --name NAME makes one)",
  );
});

it("leaves other answers as they were: another project's, another 404, another status", () => {
  const other = new CliError("x", { status: 404 }, "project 'prj_2' was deleted: …");
  expect(deletedProject(fromFile, "/v2/projects/prj_2", "x", other)).toBeUndefined();
  const noApp = new CliError("x", { status: 404 }, "app 'a' is not deployed in project 'prj_1'");
  expect(deletedProject(fromFile, "/v2/projects/prj_1/apps/a", "x", noApp)).toBeUndefined();
  const gone = new CliError("x", { status: 410 }, said);
  expect(deletedProject(fromFile, "/v2/projects/prj_1", "x", gone)).toBeUndefined();
});
