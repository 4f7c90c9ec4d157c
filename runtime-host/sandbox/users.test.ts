// Ranges of replica users claimed machine-wide, in a claims folder of the test's own.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { claimRange, UID_COUNT } from "./users.ts";

const BASE = 2_000_000_000;
let claims: string;

beforeEach(async () => {
  claims = await mkdtemp(join(tmpdir(), "runlet-claims-"));
});
afterEach(() => rm(claims, { recursive: true, force: true }));

describe("a host's range of replica users", () => {
  it("is one no live host holds: a second claim gets the next range", async () => {
    expect(claimRange(BASE, claims)).toBe(BASE);
    expect(claimRange(BASE, claims)).toBe(BASE + UID_COUNT);
    const holder = await readFile(join(claims, String(BASE)), "utf8");
    expect(holder).toMatch(new RegExp(`^${process.pid} \\d+$`));
  });

  it("is taken over from a host that is gone, or whose pid another process now has", async () => {
    await writeFile(join(claims, String(BASE)), "999999999 12345"); // no such process
    expect(claimRange(BASE, claims)).toBe(BASE);
    await writeFile(join(claims, String(BASE + UID_COUNT)), `${process.pid} 1`); // pid reused
    expect(claimRange(BASE + UID_COUNT, claims)).toBe(BASE + UID_COUNT);
  });
});
