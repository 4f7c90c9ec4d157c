/**
 * A temporary folder of app folders, as a user keeps them, for tests that `runlet deploy` them.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface AppFolders {
  /** Writes the app folder `name` afresh (its runlet.toml names it `name`, then `toml`); its path. */
  write(name: string, files: Record<string, string>, toml?: string): Promise<string>;
  remove(): Promise<void>;
}

export async function appFolders(label: string): Promise<AppFolders> {
  const root = await mkdtemp(join(tmpdir(), `runlet-${label}-apps-`));
  return {
    async write(name, files, toml = "") {
      const dir = join(root, name);
      await rm(dir, { recursive: true, force: true });
      for (const [path, text] of Object.entries({
        "runlet.toml": `name = "${name}"\n${toml}`,
        ...files,
      })) {
        await mkdir(join(dir, path, ".."), { recursive: true });
        await writeFile(join(dir, path), text);
      }
      return dir;
    },
    remove: () => rm(root, { recursive: true, force: true }),
  };
}
