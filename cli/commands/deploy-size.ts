/**
 * A bundle too large for the control plane (MAX_BUNDLE_BYTES, counted after base64 decoding),
 * refused before anything is sent: it was uploaded whole, after "Starting a replica…", and came
 * back as a 413. So is one of too many files (MAX_BUNDLE_FILES), before the files are read.
 */
import type { BundleFile } from "../../common/app-config.ts";
import { MAX_BUNDLE_BYTES, MAX_BUNDLE_FILES } from "../../common/app-limits.ts";
import { CliError, formatBytes } from "../command.ts";

/** How many of the largest files the refusal names, at most: those of 1 % of the bundle or more. */
const NAMED = 5;

/** Throws a CliError naming the size, the limit and the largest files if `files` exceed it. */
export function checkBundleSize(files: readonly BundleFile[]): void {
  const sizes = files.map((f) => ({
    path: f.path,
    bytes: Buffer.byteLength(f.contentBase64, "base64"),
  }));
  const total = sizes.reduce((n, f) => n + f.bytes, 0);
  if (total <= MAX_BUNDLE_BYTES) return;
  const largest = sizes
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, NAMED)
    .filter((f, i) => i === 0 || f.bytes * 100 >= total)
    .map((f) => `${f.path} (${formatBytes(f.bytes)})`);
  throw new CliError(
    `the folder is ${formatBytes(total)}, more than the ${formatBytes(MAX_BUNDLE_BYTES)} a deploy takes: nothing was uploaded. Its largest files: ${largest.join(", ")}. Move what the app does not need out of the folder.`,
  );
}

/**
 * Throws a CliError naming the count, the limit and the top folders holding the most files if
 * `paths` (the bundle's, `a/b.js`) are more than a bundle may hold. A folder of 6,000 files
 * (a node_modules) was read, packed and uploaded, then refused by the control plane.
 */
export function checkBundleCount(paths: readonly string[]): void {
  if (paths.length <= MAX_BUNDLE_FILES) return;
  const perTop = new Map<string, number>();
  for (const path of paths) {
    const slash = path.indexOf("/");
    const top = slash === -1 ? "." : `${path.slice(0, slash)}/`;
    perTop.set(top, (perTop.get(top) ?? 0) + 1);
  }
  const most = [...perTop]
    .filter(([top]) => top !== ".")
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([top, n]) => `${top} (${n.toLocaleString("en-US")})`);
  const where = most.length ? ` The folders with the most: ${most.join(", ")}.` : "";
  throw new CliError(
    `the folder has ${paths.length.toLocaleString("en-US")} files, more than the ${MAX_BUNDLE_FILES.toLocaleString("en-US")} a deploy takes: nothing was packed or uploaded.${where} Move what the app does not need out of the folder.`,
  );
}
