// A bundle's digest from its base64 form (what a deploy records) is the digest of its bytes (what
// a runtime host checks), the largest bundle's included.
import { describe, expect, it } from "vitest";
import type { BundleFile } from "./app-config.ts";
import { bundleDigest, digestOfBundle } from "./bundle-digest.ts";

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

describe("digestOfBundle", () => {
  it("hashes the same bytes as bundleDigest over the decoded files, in any order", async () => {
    const raw = [
      { path: "z/last.bin", data: new Uint8Array([0, 255, 10, 13]), executable: true },
      { path: "main.mjs", data: new TextEncoder().encode("export const run = () => 1;\n") },
      { path: "empty", data: new Uint8Array() },
      { path: "one-pad", data: new Uint8Array([1, 2]) },
      { path: "two-pad", data: new Uint8Array([1]) },
      { path: "données/é😀.txt", data: new TextEncoder().encode("é") },
    ].map((f) => ({ executable: false, ...f }));
    const bundle: BundleFile[] = raw.map((f) => ({
      path: f.path,
      contentBase64: b64(f.data),
      ...(f.executable ? { executable: true } : {}),
    }));
    const expected = await bundleDigest(raw);
    expect(await digestOfBundle(bundle)).toBe(expected);
    expect(await digestOfBundle([...bundle].reverse())).toBe(expected);
  });

  it("digests a 20 MiB bundle to the digest of its bytes", async () => {
    // Its cost is measured, not asserted: 2.2 s and some 700 MB when each byte went through a
    // list of one-character strings; 0.36 s in one buffer, on the 2-core machine of docs/benchmarks.md.
    const data = new Uint8Array(20 * 1024 * 1024).fill(7);
    const bundle = [{ path: "blob.bin", contentBase64: b64(data) }];
    expect(await digestOfBundle(bundle)).toBe(
      await bundleDigest([{ path: "blob.bin", data, executable: false }]),
    );
  });
});
