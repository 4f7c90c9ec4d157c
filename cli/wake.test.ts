import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { storedObjects, wakeRuns } from "./wake.ts";

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it("names the objects workerd stored (one per .sqlite), none before any, and says when it cannot tell", () => {
  dir = mkdtempSync(join(tmpdir(), "runlet-wake-"));
  expect(storedObjects(dir)).toBeUndefined(); // not wrangler's layout: the Worker wakes all
  mkdirSync(join(dir, "v3"));
  expect(storedObjects(dir)).toEqual([]);
  const shards = join(dir, "v3", "do", "runlet-RunShard");
  mkdirSync(shards, { recursive: true });
  const id = "a".repeat(64);
  for (const file of [`${id}.sqlite`, `${id}.sqlite-wal`, `${id}.sqlite-shm`, "notes.txt"])
    writeFileSync(join(shards, file), "");
  expect(storedObjects(dir)).toEqual([id]);
});

it("says a Worker that does not answer yet is waited for, not that the runs could not be resumed", async () => {
  // A host restarted before the Worker: the stack's log said "async runs could not be resumed:
  // fetch failed", which read as runs lost, while the Worker's own restart wakes them.
  const free = createServer();
  await new Promise<void>((resolve) => free.listen(0, "127.0.0.1", resolve));
  const { port } = free.address() as AddressInfo;
  await new Promise((resolve) => free.close(resolve)); // nobody listens there now
  dir = mkdtempSync(join(tmpdir(), "runlet-wake-"));
  const said = await wakeRuns(`http://127.0.0.1:${port}`, "token", dir);
  expect(said).toBe(
    "wait for the Worker, which does not answer yet (fetch failed): they are resumed once it does",
  );
});
