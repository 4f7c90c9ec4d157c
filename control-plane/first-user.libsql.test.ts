// The first user and the users an operator adds, on libSQL (a real file, empty at first).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openLibsql } from "./db/index.ts";
import { firstUserCases } from "./testing/first-user.cases.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-first-user-"));
const opened = openLibsql(`file:${join(dir, "runlet.db")}`);

afterAll(async () => {
  (await opened).close();
  await rm(dir, { recursive: true, force: true });
});

firstUserCases(async () => (await opened).db);
