/**
 * What identifies an app version's files, wherever they are: the control plane records it at
 * deploy, the Worker passes it with each call, and a runtime host that fetches the version
 * checks the files against it (docs/hosts.md). Same files, same digest; WebCrypto, so the
 * control plane computes it on Node and on Workers alike.
 */
import type { BundleFile } from "./app-config.ts";
import { concatBytes, sha256Hex } from "./bytes.ts";

export interface DigestFile {
  path: string;
  data: Uint8Array;
  executable: boolean;
}

const byPath = (a: { path: string }, b: { path: string }) =>
  a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
const headerOf = (path: string, executable: boolean, length: number) =>
  `${path}\0${executable ? "x" : "-"}\0${length}\0`;

/** SHA-256 (hex) over each file, by path: its path, whether executable, its length, its bytes. */
export async function bundleDigest(files: readonly DigestFile[]): Promise<string> {
  const encoder = new TextEncoder();
  const parts: Uint8Array[] = [];
  for (const file of [...files].sort(byPath)) {
    parts.push(encoder.encode(headerOf(file.path, file.executable, file.data.length)));
    parts.push(file.data);
  }
  return sha256Hex(concatBytes(parts));
}

/** Bytes of padded base64 (the bundle's form, checked as it came in). */
const decodedLength = (text: string) =>
  (text.length / 4) * 3 - (text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0);

/**
 * The digest of a bundle as it travels (base64 contents): the same bytes as `bundleDigest`
 * hashes, each file decoded straight into one buffer. A deploy of the largest bundle (20 MiB)
 * on Workers has 128 MB in all: decoding with `Uint8Array.from(atob(…), fn)` went through a
 * list of one string per byte, about 700 MB and 2 s of CPU for 20 MiB.
 */
export function digestOfBundle(files: readonly BundleFile[]): Promise<string> {
  const encoder = new TextEncoder();
  const sorted = [...files].sort(byPath);
  const headers = sorted.map((f) =>
    encoder.encode(headerOf(f.path, f.executable === true, decodedLength(f.contentBase64))),
  );
  let total = 0;
  for (const [i, f] of sorted.entries())
    total += (headers[i]?.length ?? 0) + decodedLength(f.contentBase64);
  const all = new Uint8Array(total);
  let at = 0;
  for (const [i, f] of sorted.entries()) {
    const header = headers[i] ?? new Uint8Array();
    all.set(header, at);
    at += header.length;
    const binary = atob(f.contentBase64);
    for (let j = 0; j < binary.length; j++) all[at + j] = binary.charCodeAt(j);
    at += binary.length;
  }
  return sha256Hex(all);
}
