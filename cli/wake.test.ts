import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { storedObjects } from "./wake.ts";

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
