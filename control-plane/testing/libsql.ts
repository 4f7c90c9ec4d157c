/** Node tests: a fixture over a real libSQL file in a fresh temp directory. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openLibsql } from "../db/index.ts";
import { createFixture, type Fixture } from "./fixture.ts";

export async function libsqlFixture(
  opts: Parameters<typeof createFixture>[1] = {},
): Promise<Fixture & { cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "runlet-cp-"));
  const { db, close } = await openLibsql(`file:${join(dir, "runlet.db")}`);
  const fixture = await createFixture(db, opts);
  return {
    ...fixture,
    async cleanup() {
      close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
