/**
 * The TypeScript of the CLI, and of the components `runlet start` runs, compiled into one module
 * per entry, so a command starts in about 0.2 s instead of 0.65 s on an idle machine (most of it
 * was tsx's loader thread resolving and loading some 160 modules one by one, zod's among them;
 * on a busy machine it was 1.5 to 3 s). `npm run bench:cli` measures it.
 *
 * Kept in node_modules/.cache/runlet/ beside a list of every file it came from, with each
 * file's size and modification time, and built again (about 0.3 s) at the first start after any
 * of them changed: an edited source is never run stale. Each file's `import.meta.url` stays its
 * own (start.ts finds the project's root by it), and stack traces name the TypeScript sources
 * (stack-map.mjs).
 * Whatever goes wrong here (no esbuild, a cache that cannot be written, a build error) answers
 * undefined, and the caller runs the sources through tsx as before.
 */
import { createHash } from "node:crypto";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { mapStacks } from "./stack-map.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const CACHE_DIR = join(ROOT, "node_modules", ".cache", "runlet");

/**
 * Left to Node at run time: a native module (@libsql/client's), and packages the CLI loads by
 * path or runs as programs of their own.
 */
const EXTERNAL = ["@libsql/client", "wrangler", "esbuild", "tsx", "playwright-core"];

/**
 * Imports `entry` (a .ts file's path): compiled when it can be, else through tsx. Exits with a
 * message when neither can be had (the dependencies are not installed).
 * @param {string} entry
 * @param {string} [cacheDir]
 */
export async function load(entry, cacheDir = CACHE_DIR) {
  const url = process.env.RUNLET_FROM_SOURCE === "1" ? undefined : await compiled(entry, cacheDir);
  if (url) {
    mapStacks(url);
    try {
      return await import(url);
    } catch (err) {
      // Removed by a newer build since its list was read: nothing of it ran. Any other error,
      // a module it imports as it runs not found among them, is the program's own: run again
      // through tsx, what ran before the error (a server started) would run twice.
      const gone = /** @type {{code?: string}} */ (err).code === "ERR_MODULE_NOT_FOUND";
      if (!gone || existsSync(fileURLToPath(url))) throw err;
    }
  }
  let register;
  try {
    ({ register } = await import("tsx/esm/api"));
  } catch {
    console.error(
      "runlet: its dependencies are not installed: run `npm install` in the Runlet folder first.",
    );
    process.exit(1);
  }
  register();
  return import(pathToFileURL(entry).href);
}

/**
 * The file URL of `entry` (a .ts path) compiled with all it imports, or undefined.
 * @param {string} entry
 * @returns {Promise<string | undefined>}
 */
export async function compiled(entry, cacheDir = CACHE_DIR) {
  // Another Node, or another way of building (this file), is another module.
  const name = createHash("sha256")
    .update(`${entry}\0${process.version}\0`)
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .digest("hex")
    .slice(0, 16);
  const listPath = join(cacheDir, `${name}.json`);
  try {
    const list = JSON.parse(readFileSync(listPath, "utf8"));
    const module = join(cacheDir, list.module);
    if (list.inputs.every(unchanged) && existsSync(module)) return pathToFileURL(module).href;
  } catch {
    // No list yet, or one that cannot be read: build.
  }
  try {
    return await build(entry, cacheDir, name, listPath);
  } catch {
    return undefined;
  }
}

/** A file's path, size and modification time, as the list keeps them.
 * @typedef {[file: string, size: number, mtimeMs: number]} Input */

/** @param {Input} input */
function unchanged([file, size, mtimeMs]) {
  const now = statSync(file, { throwIfNoEntry: false });
  return now !== undefined && now.size === size && now.mtimeMs === mtimeMs;
}

/** @param {string} entry @param {string} cacheDir @param {string} name @param {string} listPath */
async function build(entry, cacheDir, name, listPath) {
  // A cache that cannot be written (a read-only install, another user's): no build, whose
  // 0.3 s would only be thrown away before tsx's own start.
  mkdirSync(cacheDir, { recursive: true });
  accessSync(cacheDir, constants.W_OK);
  const esbuild = await import("esbuild");
  const began = Date.now();
  // esbuild's service process would otherwise live as long as the process that built: a
  // component under `runlet start` would carry it as a child of its own.
  const result = await esbuild
    .build({
      entryPoints: [entry],
      absWorkingDir: ROOT,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      external: EXTERNAL,
      // Bundled CommonJS packages may call require(); an ES module has none of its own.
      banner: {
        js: 'import { createRequire as __runletRequire } from "node:module"; const require = __runletRequire(import.meta.url);',
      },
      // Beside the module, read when a stack is formatted (stack-map.mjs), not as it loads.
      sourcemap: "external",
      sourcesContent: false,
      metafile: true,
      write: false,
      outfile: join(cacheDir, `${name}.mjs`),
      logLevel: "silent",
      plugins: [ownUrls],
    })
    .finally(() => esbuild.stop());
  const output = (/** @type {string} */ ending) =>
    result.outputFiles?.find((file) => file.path.endsWith(ending))?.contents;
  const code = output(".mjs");
  const map = output(".mjs.map");
  if (!code || !map) return undefined;
  const module = `${name}-${createHash("sha256").update(code).digest("hex").slice(0, 12)}.mjs`;
  // The map first: a module is used once it is there. The comment names it for Node's own
  // source maps (`--enable-source-maps`).
  writeAtomically(join(cacheDir, `${module}.map`), map);
  writeAtomically(
    join(cacheDir, module),
    Buffer.concat([code, Buffer.from(`\n//# sourceMappingURL=${module}.map\n`)]),
  );
  // Beside the files bundled, the two that say how: tsconfig.json (JSX) and package.json (what
  // `runlet/client` is).
  const read = [...Object.keys(result.metafile?.inputs ?? {}), "tsconfig.json", "package.json"];
  const inputs = read.map((input) => {
    const file = join(ROOT, input);
    const { size, mtimeMs } = statSync(file);
    return /** @type {Input} */ ([file, size, mtimeMs]);
  });
  // A file that may have changed while it was being read (its time within the build, or in the
  // 2 s before it: some file systems keep whole seconds): this build is used once, not kept for
  // the next. A time past the build's end is a clock's skew, not a change: kept (else every
  // command would build again).
  const ended = Date.now();
  if (inputs.every(([, , mtimeMs]) => mtimeMs < began - 2000 || mtimeMs > ended)) {
    replaced(listPath, cacheDir);
    writeAtomically(listPath, JSON.stringify({ module, inputs }));
    prune(cacheDir, name, module);
  }
  return pathToFileURL(join(cacheDir, module)).href;
}

/**
 * Marks the module the list named until now as replaced now, for `prune`: a command that read the
 * list just before may be about to load it.
 * @param {string} listPath @param {string} cacheDir
 */
function replaced(listPath, cacheDir) {
  try {
    const now = new Date();
    utimesSync(join(cacheDir, JSON.parse(readFileSync(listPath, "utf8")).module), now, now);
  } catch {
    // No list before, or its module gone already.
  }
}

const MINUTE_MS = 60_000;
const WEEK_MS = 7 * 24 * 60 * MINUTE_MS;

/**
 * Removes what an earlier build left (each module 0.5 to 1.6 MB, its map about as much): the modules
 * built before this one from the same entry, with their maps, a minute after they were replaced
 * (no command that read the list before is still about to load one), and anything a week old
 * (built by another Node, or by an earlier version of this file; one still in use is built
 * again once).
 */
/** @param {string} cacheDir @param {string} name @param {string} module */
function prune(cacheDir, name, module) {
  for (const file of readdirSync(cacheDir)) {
    if (file === module || file === `${module}.map` || file === `${name}.json`) continue;
    const path = join(cacheDir, file);
    const age = Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (age > (file.startsWith(`${name}-`) ? MINUTE_MS : WEEK_MS)) rmSync(path, { force: true });
  }
}

/** @param {string} path @param {string | Uint8Array} data */
function writeAtomically(path, data) {
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, data);
  renameSync(partial, path);
}

/**
 * Whether `path` is a dependency's: in a node_modules folder, Runlet's own (ROOT's) or, for a
 * Runlet installed as a package (`npm install <git URL>`: ROOT is itself in a node_modules),
 * one its dependencies were put in beside it.
 * @param {string} path
 */
function isDependency(path) {
  const own = path.startsWith(ROOT) ? path.slice(ROOT.length) : path;
  return own.includes(`node_modules${sep}`);
}

/**
 * Each of the project's own files keeps its own `import.meta.url` (and `dirname`, `filename`),
 * not the bundle's.
 * @type {import("esbuild").Plugin}
 */
const ownUrls = {
  name: "own-import-meta-url",
  setup(build) {
    build.onLoad({ filter: /\.([cm]?[jt]s|tsx)$/ }, (args) => {
      if (isDependency(args.path)) return undefined;
      const source = readFileSync(args.path, "utf8");
      const own = {
        url: pathToFileURL(args.path).href,
        dirname: dirname(args.path),
        filename: args.path,
      };
      return {
        contents: source.replace(/\bimport\.meta\.(url|dirname|filename)\b/g, (_, key) =>
          JSON.stringify(own[/** @type {keyof typeof own} */ (key)]),
        ),
        loader: args.path.endsWith(".tsx") ? "tsx" : /ts$/.test(args.path) ? "ts" : "js",
      };
    });
  },
};
