/** Checks an app bundle and writes it out as one version folder, all or nothing. */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import { type BundleFile, isBase64, pathClash } from "../common/app-config.ts";
import { REPLACED_PREFIX, STAGING_PREFIX, versionDirName } from "../common/app-paths.ts";
import { HttpError } from "./http/errors.ts";
import { MAX_BUNDLE_BYTES } from "./limits.ts";

export interface DecodedFile {
  path: string;
  data: Buffer;
  executable: boolean;
}

/** Decodes a bundle's files: 400 for paths that clash or bad base64, 413 past the size limit. */
export function decodeBundle(files: readonly BundleFile[]): DecodedFile[] {
  const clash = pathClash(files.map((f) => f.path));
  if (clash) throw new HttpError(400, clash);
  let bytes = 0;
  for (const file of files) bytes += Buffer.byteLength(file.contentBase64, "base64");
  if (bytes > MAX_BUNDLE_BYTES) {
    throw new HttpError(413, `the bundle is larger than ${MAX_BUNDLE_BYTES / 1024 / 1024} MiB`);
  }
  return files.map((file) => {
    if (!isBase64(file.contentBase64)) {
      throw new HttpError(400, `files: '${file.path}' is not valid base64`);
    }
    return {
      path: file.path,
      data: Buffer.from(file.contentBase64, "base64"),
      executable: file.executable === true,
    };
  });
}

async function writeFiles(dir: string, files: readonly DecodedFile[]): Promise<void> {
  for (const file of files) {
    const target = resolve(dir, file.path);
    if (!target.startsWith(dir + sep)) {
      throw new HttpError(400, `files: '${file.path}' is outside the bundle`);
    }
    try {
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, file.data, { mode: file.executable ? 0o755 : 0o644, flag: "wx" });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EEXIST" || code === "ENOTDIR" || code === "EISDIR") {
        throw new HttpError(400, `files: '${file.path}' clashes with another file of the bundle`);
      }
      throw err;
    }
  }
}

/**
 * Writes `files` to `{appDir}/{name}/` (`v{version}` unless named otherwise): first into a
 * staging folder, then renamed into place, so a crash never leaves a half-written version. An
 * existing folder of the same name is swapped out (see `moveIntoPlace`).
 */
export async function writeVersion(
  appDir: string,
  version: number,
  files: readonly DecodedFile[],
  name = versionDirName(version),
): Promise<string> {
  await mkdir(appDir, { recursive: true });
  const staging = await mkdtemp(join(appDir, STAGING_PREFIX));
  const target = join(appDir, name);
  try {
    await writeFiles(staging, files);
    await moveIntoPlace(staging, target);
    return target;
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Renames the folder `from` to `target`, in the same app folder. An existing `target` is swapped
 * out first (and restored on start if the host died mid-swap: apps.ts, `recoverAppDir`).
 */
export async function moveIntoPlace(from: string, target: string): Promise<void> {
  try {
    await rename(from, target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST") throw err;
    const old = join(
      dirname(target),
      `${REPLACED_PREFIX}${basename(target)}-${randomBytes(4).toString("hex")}`,
    );
    await rename(target, old);
    await rename(from, target);
    await rm(old, { recursive: true, force: true });
  }
}
