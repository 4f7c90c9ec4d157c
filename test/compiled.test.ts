import { spawnSync } from "node:child_process";
import {
  copyFile,
  writeFile as fsWriteFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  utimes,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { compiled } from "../bin/compiled.mjs";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const COMPILED = join(ROOT, "bin", "compiled.mjs");

/**
 * Writes a file as if it were written `ago` ms before: a file written in the 2 s before a build
 * may have changed during it, and that build is not kept.
 */
async function writeFile(path: string, text: string, ago = 10_000): Promise<void> {
  await fsWriteFile(path, text);
  const then = new Date(Date.now() - ago);
  await utimes(path, then, then);
}

describe("the compiled CLI (bin/compiled.mjs)", () => {
  let dir: string;
  let cache: string;
  let entry: string;
  const b = () => join(dir, "sub", "b.ts");

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "runlet-compiled-"));
    cache = join(dir, "cache");
    entry = join(dir, "a.ts");
    await mkdir(join(dir, "sub"));
    // As in the project: .ts files are ES modules (to tsx too).
    await writeFile(join(dir, "package.json"), '{"type": "module"}\n');
    await writeFile(
      entry,
      'import { here, word } from "./sub/b.ts";\nexport const value: number = 1;\nexport { here, word };\n',
    );
    await writeFile(
      b(),
      'export const here: string = import.meta.url;\nexport const word = "first";\nexport function boom(): never {\n  throw new Error("boom");\n}\n',
    );
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("builds one module of a TypeScript file and what it imports, each file keeping its own import.meta.url", async () => {
    const url = String(await compiled(entry, cache));
    expect(url).toMatch(/^file:.*\.mjs$/);
    const mod = await import(url);
    expect(mod.value).toBe(1);
    expect(mod.word).toBe("first");
    expect(mod.here).toBe(pathToFileURL(b()).href);
  });

  it("keeps each file's own import.meta.url, dirname and filename in a Runlet installed as a package, itself in a node_modules folder", async () => {
    // `npm install <git URL>`: the checkout's files under node_modules/runlet/, its dependencies
    // beside it. start.ts's ROOT, the migrations, the shim are all found by import.meta.url.
    const root = join(dir, "installed", "node_modules", "runlet");
    await mkdir(join(root, "bin"), { recursive: true });
    await mkdir(join(root, "sub"));
    await symlink(
      join(ROOT, "node_modules", "esbuild"),
      join(dir, "installed", "node_modules", "esbuild"),
    );
    await copyFile(COMPILED, join(root, "bin", "compiled.mjs"));
    await copyFile(join(ROOT, "bin", "stack-map.mjs"), join(root, "bin", "stack-map.mjs"));
    await writeFile(join(root, "package.json"), '{"type": "module"}\n');
    await writeFile(join(root, "tsconfig.json"), "{}\n");
    await writeFile(join(root, "main.ts"), 'export * from "./sub/where.ts";\n');
    const where = join(root, "sub", "where.ts");
    await writeFile(
      where,
      "export const url: string = import.meta.url;\nexport const dir: string = import.meta.dirname;\nexport const file: string = import.meta.filename;\n",
    );
    const loaded = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { compiled } = await import(${JSON.stringify(pathToFileURL(join(root, "bin", "compiled.mjs")).href)});
         const url = await compiled(${JSON.stringify(join(root, "main.ts"))});
         if (!url) throw new Error("not compiled");
         const { url: own, dir, file } = await import(url);
         console.log(JSON.stringify({ own, dir, file }));`,
      ],
      { encoding: "utf8" },
    );
    expect(loaded.stderr).toBe("");
    expect(JSON.parse(loaded.stdout)).toEqual({
      own: pathToFileURL(where).href,
      dir: join(root, "sub"),
      file: where,
    });
  });

  it("uses that module while nothing changed, and builds again once a file it came from changed", async () => {
    const url = String(await compiled(entry, cache));
    const built = (await stat(fileURLToPath(url))).mtimeMs;
    expect(await compiled(entry, cache)).toBe(url);
    expect((await stat(fileURLToPath(url))).mtimeMs).toBe(built);

    await writeFile(b(), 'export const here = import.meta.url;\nexport const word = "second";\n');
    const again = String(await compiled(entry, cache));
    expect(again).not.toBe(url);
    expect((await import(again)).word).toBe("second");
    // The list names the new module; the one before stays a minute for a command loading it.
    expect((await readdir(cache)).filter((f) => f.endsWith(".mjs"))).toHaveLength(2);
    expect(await compiled(entry, cache)).toBe(again);
  });

  it("keeps a build only once its files are 2 s old, and one whose file's time is in the future (a clock's skew)", async () => {
    const listed = async () =>
      JSON.parse(
        await readFile(
          join(cache, (await readdir(cache)).find((f) => f.endsWith(".json")) ?? ""),
          "utf8",
        ),
      ).module as string;
    await writeFile(b(), 'export const here = "";\nexport const word = "just now";\n', 0);
    const fresh = String(await compiled(entry, cache));
    expect(fresh.endsWith(await listed())).toBe(false);
    await writeFile(b(), 'export const here = "";\nexport const word = "skewed";\n', -3_600_000);
    const skewed = String(await compiled(entry, cache));
    expect(skewed.endsWith(await listed())).toBe(true);
    expect((await import(skewed)).word).toBe("skewed");
  });

  it("keeps the module a build replaced for a minute from its replacement, not from its own build", async () => {
    const old = String(await compiled(entry, cache));
    const longAgo = new Date(Date.now() - 120_000);
    await utimes(fileURLToPath(old), longAgo, longAgo);
    await writeFile(b(), 'export const here = "";\nexport const word = "second";\n');
    await compiled(entry, cache);
    expect((await stat(fileURLToPath(old))).isFile()).toBe(true);
  });

  it("builds again when its module is gone, and runs the sources through tsx when it goes between its list's read and its import", async () => {
    const url = String(await compiled(entry, cache));
    await rm(fileURLToPath(url));
    const rebuilt = String(await compiled(entry, cache));
    expect((await stat(fileURLToPath(rebuilt))).isFile()).toBe(true);
    expect((await import(rebuilt)).word).toBe("second");

    // What load() meets when a newer build removed the module just after its list was read:
    // a hook removes it as it is resolved, as a pruning between the two would. tsx runs it.
    const removing = `import { rmSync } from "node:fs";
      export async function resolve(specifier, context, next) {
        if (specifier.startsWith(${JSON.stringify(pathToFileURL(cache).href)}))
          rmSync(new URL(specifier), { force: true });
        return next(specifier, context);
      }`;
    const loaded = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import { register } from "node:module";
         register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(removing)}`)});
         const { load } = await import(${JSON.stringify(pathToFileURL(COMPILED).href)});
         const mod = await load(${JSON.stringify(entry)}, ${JSON.stringify(cache)});
         console.log(mod.word);`,
      ],
      { encoding: "utf8" },
    );
    expect(loaded.stderr).toBe("");
    expect(loaded.stdout).toBe("second\n");
  });

  it("runs a module once: one that ran and then failed to import a module is not run again through tsx", async () => {
    const once = join(dir, "once.ts");
    await writeFile(
      once,
      'console.log("ran");\nconst plugin: string = "./sub/not-there.mjs";\nawait import(plugin);\n',
    );
    const loaded = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { load } = await import(${JSON.stringify(pathToFileURL(COMPILED).href)});
         await load(${JSON.stringify(once)}, ${JSON.stringify(cache)});`,
      ],
      { encoding: "utf8" },
    );
    expect(loaded.stderr).toContain("ERR_MODULE_NOT_FOUND");
    expect(loaded.stdout).toBe("ran\n");
  });

  it("names the TypeScript file and line in a stack trace, with Node's source maps on or off", async () => {
    await writeFile(
      b(),
      'export const here = import.meta.url;\nexport const word = "third";\nexport function boom(): never {\n  throw new Error("boom");\n}\n',
    );
    await writeFile(entry, 'import { boom } from "./sub/b.ts";\nboom();\n');
    // As bin/runlet.mjs loads the CLI (its map read only for the stack: stack-map.mjs), and
    // under --enable-source-maps (Node reads the map the module names).
    for (const flags of [[], ["--enable-source-maps"]]) {
      const thrown = spawnSync(
        process.execPath,
        [
          ...flags,
          "--input-type=module",
          "-e",
          `const { load } = await import(${JSON.stringify(pathToFileURL(COMPILED).href)});
           await load(${JSON.stringify(entry)}, ${JSON.stringify(cache)});`,
        ],
        { encoding: "utf8" },
      );
      expect(thrown.status).not.toBe(0);
      expect(thrown.stderr).toContain(`at boom (${b()}:4:9)`);
      expect(thrown.stderr).toContain(`${entry}:2:1`);
    }
  });

  it("answers undefined for a file it cannot build, so the caller runs the sources through tsx", async () => {
    const broken = join(dir, "broken.ts");
    await writeFile(broken, "export const x = ;\n");
    expect(await compiled(broken, cache)).toBeUndefined();
  });

  it("does not build where its module could not be kept (a read-only install): tsx at once", async () => {
    // As root, a read-only folder is still writable: a folder that cannot be made stands in.
    const file = join(dir, "a-file");
    await writeFile(file, "");
    const build = vi.fn();
    vi.resetModules();
    vi.doMock("esbuild", () => ({ build, stop: vi.fn() }));
    try {
      const fresh: typeof import("../bin/compiled.mjs") = await import("../bin/compiled.mjs");
      expect(await fresh.compiled(entry, join(file, "cache"))).toBeUndefined();
      expect(build).not.toHaveBeenCalled();
    } finally {
      vi.doUnmock("esbuild");
      vi.resetModules();
    }
  });

  // A build that failed would only make the CLI slow again, through tsx: say so here.
  it.each(["cli/main.ts", "control-plane/server.ts", "runtime-host/main.ts", "cli/worker-dev.ts"])(
    "builds %s",
    async (file) => {
      expect(await compiled(join(ROOT, file), cache)).toMatch(/^file:/);
    },
  );
});
