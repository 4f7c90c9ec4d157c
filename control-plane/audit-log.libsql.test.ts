// The audit-log cases on libSQL, the control plane's database under Node (a real file).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openLibsql } from "./db/index.ts";
import { auditExportCases } from "./testing/audit-export.cases.ts";
import { auditLogCases } from "./testing/audit-log.cases.ts";
import { paginationProperty } from "./testing/pagination.property.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-audit-"));
const opened = openLibsql(`file:${join(dir, "runlet.db")}`);

afterAll(async () => {
  (await opened).close();
  await rm(dir, { recursive: true, force: true });
});

auditLogCases(async () => (await opened).db);

auditExportCases(async () => (await opened).db);

paginationProperty(async () => (await opened).db, 60);
