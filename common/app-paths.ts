/**
 * Where the runtime host keeps deployed apps (`{home}/host/apps/`); the control plane of the same
 * home reads versions deployed before it kept bundles there once (control-plane/old-bundles.ts):
 *
 *   package.json                     guard: apps do not inherit the "type" of a package.json above
 *   {project}/{app}/current.json     the current version, replaced atomically
 *   {project}/{app}/v{version}/      the files of each deployed version
 *   {project}/{app}/.staging-*       a version being written (removed on start)
 *   {project}/{app}/.staging-trial-v{n}-{digest}
 *                                    a version a deploy's trial started, not current yet
 *   {project}/{app}/.replaced-v{n}-* a version's old files while they are swapped out
 */
import { join } from "node:path";

export const appsRoot = (home: string) => join(home, "host", "apps");

export const appRoot = (root: string, project: string, app: string) => join(root, project, app);

export const currentFile = (appDir: string) => join(appDir, "current.json");

export const versionDirName = (version: number) => `v${version}`;

export const STAGING_PREFIX = ".staging-";

export const REPLACED_PREFIX = ".replaced-";
