/**
 * `runlet backup DIR`: a copy of `RUNLET_HOME` taken while it runs. A `cp -a` of a running home
 * copies each SQLite file and its `-wal` at different moments, and a checkpoint between the two
 * tears the copy; here each database (the control plane's `runlet.db`, the run shards under
 * `wrangler/`) is copied by SQLite itself (`VACUUM INTO`, a consistent snapshot of that file),
 * the other files as they are, with their modes and times (the runtime host drops its oldest
 * run logs by their times). The copy is made in `DIR.partial` and renamed to `DIR` once whole
 * (docs/deploy.md, "Backing up, restoring and moving a home").
 */
import { chmod, copyFile, mkdir, readdir, rename, rm, stat, utimes } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { runletHome } from "../../control-plane/home.ts";
import { CliError, type Command } from "../command.ts";

const USAGE = `Usage: runlet backup <dir> [--json]

Copies RUNLET_HOME (its database, keys, tokens, app bundles, the run store's queued and
running async runs, and the runtime host's logs of runs) to <dir>, a folder that must not exist
yet, while runlet start runs or not. Each SQLite database is copied by SQLite (a consistent
snapshot of it); logs, the pid file, worker.env and the runtime host's own copies of apps
(fetched again) and spare folders are left out. Restore by starting runlet with
RUNLET_HOME=<dir> (docs/deploy.md).`;

/**
 * What a backup leaves out, by path in the home: written again at start, fetched again, or of
 * this process only. `host/apps` is the host's copies of app versions (from `bundles/`);
 * `host/slots` its spare processes' folders, emptied at its start (a sandbox may have mounts
 * there). The rest of `host/`, its runs' logs, is copied.
 */
const SKIP = new Set(["logs", "runlet.pid", "worker.env", "host/apps", "host/slots"]);
const isDatabase = (name: string) => name === "runlet.db" || name.endsWith(".sqlite");
const isSidecar = (name: string) => /(\.db|\.sqlite)-(wal|shm|journal)$/.test(name);
/** A file or folder removed while the backup ran (a run's log dropped, a version pruned). */
const isGone = (err: unknown) => (err as NodeJS.ErrnoException).code === "ENOENT";

async function snapshot(from: string, to: string): Promise<void> {
  // Loaded here: a static import put libSQL's native module in every CLI command's start.
  const { createClient } = await import("@libsql/client");
  const db = createClient({ url: `file:${from}` });
  try {
    await db.execute({ sql: "VACUUM INTO ?", args: [to] });
  } finally {
    db.close();
  }
  await chmod(to, (await stat(from)).mode & 0o777);
}

/**
 * A file as it is now: one being appended to (a run's log) may end in a line cut short, which
 * its reader leaves out. Its times are kept. False if it was removed meanwhile.
 */
async function copyPlain(from: string, to: string): Promise<boolean> {
  try {
    const info = await stat(from);
    await copyFile(from, to);
    await chmod(to, info.mode & 0o777);
    await utimes(to, info.atime, info.mtime);
    return true;
  } catch (err) {
    if (!isGone(err)) throw err;
    await rm(to, { force: true });
    return false;
  }
}

async function copyTree(
  from: string,
  to: string,
  path: string,
  count: { dbs: number; files: number },
) {
  await mkdir(to, { mode: (await stat(from)).mode & 0o777 });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const rel = path ? `${path}/${entry.name}` : entry.name;
    if (SKIP.has(rel) || isSidecar(entry.name) || entry.name.endsWith(".tmp")) continue;
    const [src, dst] = [join(from, entry.name), join(to, entry.name)];
    if (entry.isDirectory())
      await copyTree(src, dst, rel, count).catch(async (err: unknown) => {
        if (!isGone(err)) throw err;
        await rm(dst, { recursive: true, force: true });
      });
    else if (!entry.isFile()) continue;
    else if (isDatabase(entry.name)) {
      await snapshot(src, dst);
      count.dbs++;
    } else if (await copyPlain(src, dst)) count.files++;
  }
}

/** Copies `home` to `dir` (which must not exist); what was copied. */
export async function backupHome(home: string, dir: string) {
  const [src, dst] = [resolve(home), resolve(dir)];
  if (!relative(src, dst).startsWith("..") && relative(src, dst) !== "")
    throw new CliError(`${dst} is inside RUNLET_HOME ${src}: give a folder outside it`);
  await stat(join(src, "runlet.db")).catch(() => {
    throw new CliError(`${src} has no runlet.db: is RUNLET_HOME a Runlet home?`);
  });
  if (
    await stat(dst).then(
      () => true,
      () => false,
    )
  )
    throw new CliError(`${dst} exists already: give a new folder`);
  const partial = `${dst}.partial`;
  await rm(partial, { recursive: true, force: true });
  const count = { dbs: 0, files: 0 };
  try {
    await copyTree(src, partial, "", count);
    await rename(partial, dst);
  } catch (err) {
    await rm(partial, { recursive: true, force: true });
    if (err instanceof CliError) throw err;
    throw new CliError(`the backup failed, nothing was left in ${dst}: ${(err as Error).message}`);
  }
  return { dir: dst, databases: count.dbs, files: count.files };
}

export const backup: Command = {
  name: "backup",
  summary: "copy RUNLET_HOME to a folder, consistently, while it runs",
  usage: USAGE,
  options: {},
  async run({ values, positionals }) {
    const [dir, ...more] = positionals;
    if (dir === undefined || more.length > 0)
      throw new CliError(`give one folder to copy to\n\n${USAGE}`);
    const done = await backupHome(runletHome(), dir);
    if (values.json) console.log(JSON.stringify(done));
    else
      console.log(
        `Backed up ${runletHome()} to ${done.dir}: ${done.databases} databases, ${done.files} other files`,
      );
    return 0;
  },
};
