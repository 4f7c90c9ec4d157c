// mkdir -p that ends: Node's recursive mkdir never returned for a folder under /proc.
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { makeFolders } from "./make-folders.ts";

it("makes every missing level, each with the mode, and takes folders that exist", async () => {
  const top = await mkdtemp(join(tmpdir(), "runlet-folders-"));
  try {
    makeFolders(join(top, "a", "b", "c"));
    expect((await stat(join(top, "a", "b", "c"))).isDirectory()).toBe(true);
    expect((await stat(join(top, "a", "b"))).mode & 0o777).toBe(0o700);
    makeFolders(join(top, "a", "b", "c")); // again: nothing to do
    await writeFile(join(top, "file"), "");
    expect(() => makeFolders(join(top, "file", "x"))).toThrow(/ENOTDIR/);
  } finally {
    await rm(top, { recursive: true, force: true });
  }
});

it.skipIf(process.platform !== "linux")("ends with the error of a level procfs refuses", () => {
  expect(() => makeFolders("/proc/runlet-nope/logs")).toThrow(
    expect.objectContaining({ code: "ENOENT", path: "/proc/runlet-nope" }),
  );
});
