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

/** SHA-256 (hex) over each file, by path: its path, whether executable, its length, its bytes. */
export async function bundleDigest(files: readonly DigestFile[]): Promise<string> {
  const encoder = new TextEncoder();
  const parts: Uint8Array[] = [];
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    parts.push(
      encoder.encode(`${file.path}\0${file.executable ? "x" : "-"}\0${file.data.length}\0`),
    );
    parts.push(file.data);
  }
  return sha256Hex(concatBytes(parts));
}

/** The digest of a bundle as it travels (base64 contents). */
export function digestOfBundle(files: readonly BundleFile[]): Promise<string> {
  return bundleDigest(
    files.map((f) => ({
      path: f.path,
      executable: f.executable === true,
      data: Uint8Array.from(atob(f.contentBase64), (c) => c.charCodeAt(0)),
    })),
  );
}
