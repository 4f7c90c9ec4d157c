/**
 * `runlet backup DIR`: a copy of `RUNLET_HOME` taken while it runs. A `cp -a` of a running home
 * copies each SQLite file and its `-wal` at different moments, and a checkpoint between the two
 * tears the copy; here each database (the control plane's `runlet.db`, the run shards under
 * `wrangler/`) is copied by SQLite itself (`VACUUM INTO`, a consistent snapshot of that file),
 * the other files as they are. The copy is made in `DIR.partial` and renamed to `DIR` once
 * whole (docs/deploy.md, "Backing up, restoring and moving a home").
 */
import { chmod, copyFile, mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { runletHome } from "../../control-plane/home.ts";
import { CliError, type Command } from "../command.ts";

const USAGE = `Usage: runlet backup <dir> [--json]

Copies RUNLET_HOME (its database, keys, tokens, app bundles and the run store's queued and
running async runs) to <dir>, a folder that must not exist yet, while runlet start runs or not.
Each SQLite database is copied by SQLite (a consistent snapshot of it); logs, the pid file,
worker.env and the runtime host's own copies of apps (fetched again) are left out. Restore by
starting runlet with RUNLET_HOME=<dir> (docs/deploy.md).`;

/** What a backup leaves out: written again at start, fetched again, or of this process only. */
const SKIP = new Set(["logs", "runlet.pid", "worker.env", "host"]);
const isDatabase = (name: string) => name === "runlet.db" || name.endsWith(".sqlite");
const isSidecar = (name: string) => /(\.db|\.sqlite)-(wal|shm|journal)$/.test(name);

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

async function copyTree(
  from: string,
  to: string,
  top: boolean,
  count: { dbs: number; files: number },
) {
  await mkdir(to, { mode: (await stat(from)).mode & 0o777 });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    if ((top && SKIP.has(entry.name)) || isSidecar(entry.name) || entry.name.endsWith(".tmp"))
      continue;
    const [src, dst] = [join(from, entry.name), join(to, entry.name)];
    if (entry.isDirectory()) await copyTree(src, dst, false, count);
    else if (!entry.isFile()) continue;
    else if (isDatabase(entry.name)) {
      await snapshot(src, dst);
      count.dbs++;
    } else {
      await copyFile(src, dst);
      await chmod(dst, (await stat(src)).mode & 0o777);
      count.files++;
    }
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
    await copyTree(src, partial, true, count);
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
