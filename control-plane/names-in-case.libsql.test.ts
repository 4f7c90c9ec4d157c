// Live names that differ only in case (service accounts, host tokens) are one name, on libSQL
// (the control plane's database under Node).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openLibsql } from "./db/index.ts";
import { namesInCaseCases } from "./testing/names-in-case.cases.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-names-in-case-"));
const opened = openLibsql(`file:${join(dir, "runlet.db")}`);

afterAll(async () => {
  (await opened).close();
  await rm(dir, { recursive: true, force: true });
});

namesInCaseCases(async () => (await opened).db);
