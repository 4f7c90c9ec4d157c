// Service accounts, users and secrets, every one or page by page, on libSQL (the control plane's
// database under Node).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openLibsql } from "./db/index.ts";
import { ownerListsCases } from "./testing/owner-lists.cases.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-owner-lists-"));
const opened = openLibsql(`file:${join(dir, "runlet.db")}`);

afterAll(async () => {
  (await opened).close();
  await rm(dir, { recursive: true, force: true });
});

ownerListsCases(async () => (await opened).db);
