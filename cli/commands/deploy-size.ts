/**
 * A bundle too large for the control plane (MAX_BUNDLE_BYTES, counted after base64 decoding),
 * refused before anything is sent: it was uploaded whole, after "Starting a replica…", and came
 * back as a 413.
 */
import type { BundleFile } from "../../common/app-config.ts";
import { MAX_BUNDLE_BYTES } from "../../common/app-limits.ts";
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
