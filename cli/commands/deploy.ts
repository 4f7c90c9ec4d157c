import { readdir, readFile, readlink, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { parse as parseToml } from "smol-toml";
import {
  appConfigSchema,
  type BundleFile,
  describeConfigError,
  describeTomlError,
  missingEntry,
} from "../../common/app-config.ts";
import { ENV } from "../../common/consts.ts";
import { homePaths } from "../../control-plane/home.ts";
import { CliError, type Command, formatBytes } from "../command.ts";
import { cliHome, loadConfig } from "../config.ts";
import { withCheck } from "../cut-off.ts";
import { sendDeploy, startedNote } from "./deploy-request.ts";
import { checkBundleCount, checkBundleSize } from "./deploy-size.ts";
import { checkSyntax, describeProblems, filesToCheck, languageOf } from "./syntax-check.ts";

const SKIP = new Set([".git", ".runlet", ".wrangler", ".DS_Store"]);

/**
 * `.env` and `.env.*` (not `.env.example`, `.sample`, `.template`): the secrets of a local run,
 * which a deploy uploaded into every version's bundle, readable by the app and kept in plain
 * text (the new user's round). Left out with a note naming them; `runlet secrets set` is where
 * a secret goes.
 */
const isEnvFile = (name: string) =>
  /^\.env(\..+)?$/.test(name) && !/\.(example|sample|template)$/.test(name);

/**
 * The folder's files, for the bundle. A symbolic link is followed when what it points to is in
 * the folder (`node_modules/.bin`, a shared file): uploaded at the link's path. One that points
 * outside it (or into a folder never uploaded, `.runlet`) is refused, before anything is sent:
 * skipped, the app lacked the file at its first call; followed, a deploy could publish what was
 * never meant to leave the machine. One that points to nothing, or to a folder it is inside of,
 * is skipped with a note.
 */
export async function collect(root: string): Promise<{ files: BundleFile[]; notes: string[] }> {
  /** The files found (`full` the path to read), read once the folder is known to fit. */
  const found: { path: string; full: string }[] = [];
  const notes: string[] = [];
  const top = await realpath(root);
  async function walk(dir: string, above: Set<string>) {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (SKIP.has(entry.name)) continue;
      const full = join(dir, entry.name);
      const path = relative(root, full).split(sep).join("/");
      if (isEnvFile(entry.name)) {
        notes.push(
          `Skipped ${path}: a deploy does not upload .env files. Give the app its secrets with runlet secrets set NAME (it reads them as process.env.NAME / os.environ["NAME"]).`,
        );
        continue;
      }
      let isDir = entry.isDirectory();
      let isFile = entry.isFile();
      if (entry.isSymbolicLink()) {
        const target = await realpath(full).catch(() => undefined);
        if (target === undefined) {
          notes.push(
            `Skipped ${path}: a symbolic link to ${await readlink(full)}, which is not there.`,
          );
          continue;
        }
        const inside = relative(top, target);
        const parts = inside.split(sep);
        const outside = parts[0] === ".." || isAbsolute(inside);
        // Into a folder never uploaded (.runlet, .git): said so, not "outside", which it is not.
        const skipped = outside ? undefined : parts.find((part) => SKIP.has(part));
        if (outside || skipped) {
          const where = skipped
            ? `in ${skipped}, which a deploy never uploads`
            : `outside the app folder ${top}`;
          throw new CliError(
            `${path} is a symbolic link to ${target}, ${where}: nothing was uploaded. Copy what it points to into the folder, or remove the link.`,
          );
        }
        if (above.has(target)) {
          notes.push(`Skipped ${path}: a symbolic link to a folder it is inside of.`);
          continue;
        }
        const st = await stat(full);
        isDir = st.isDirectory();
        isFile = st.isFile();
      }
      if (isDir) await walk(full, new Set([...above, await realpath(full)]));
      else if (isFile) found.push({ path, full });
    }
  }
  await walk(root, new Set([top]));
  // Counted before any is read: more than a bundle holds was packed, uploaded, then refused.
  checkBundleCount(found.map((f) => f.path));
  const files: BundleFile[] = [];
  for (const { path, full } of found) {
    const mode = (await stat(full)).mode;
    files.push({
      path,
      contentBase64: (await readFile(full)).toString("base64"),
      ...(mode & 0o111 ? { executable: true } : {}),
    });
  }
  return { files, notes };
}

/** Python's package lists: Runlet uploads them like any file, and installs nothing from them. */
const PACKAGE_LISTS = ["requirements.txt", "pyproject.toml", "Pipfile", "setup.py"];

/**
 * What a deploy says of a package list in the bundle's top folder: the app learnt that its
 * packages were missing only at its first call (a 502 quoting "ModuleNotFoundError"). Else
 * undefined.
 */
export function packagesNote(paths: readonly string[]): string | undefined {
  const found = PACKAGE_LISTS.filter((name) => paths.includes(name));
  if (found.length === 0) return undefined;
  return `Note: ${found.join(", ")} ${found.length === 1 ? "is" : "are"} uploaded but not installed: Runlet installs no packages. The app runs with python3 as the runtime host has it (its standard library, and what the host itself installed). Vendor pure-Python packages into the folder (pip install -r requirements.txt --target vendor, then sys.path.insert(0, "vendor") before importing them), or keep to the standard library.`;
}

/**
 * Refuses, before anything is sent, an app whose code does not parse (syntax-check.ts): the
 * interpreter's excerpt on stderr, the files and lines in the error.
 */
async function checkCode(
  dir: string,
  manifest: Record<string, unknown>,
  files: readonly BundleFile[],
  json: boolean,
): Promise<void> {
  const language = languageOf(manifest);
  if (!language) return;
  const paths = filesToCheck(
    files.map((f) => f.path),
    language,
  );
  const { problems, notes } = await checkSyntax(dir, paths, language);
  for (const line of notes) console.error(line);
  if (problems.length === 0) return;
  if (!json)
    for (const p of problems.slice(0, 3))
      console.error([`${p.path}${p.line ? `:${p.line}` : ""}`, ...p.excerpt].join("\n"));
  const tool = language === "node" ? "node --check" : "python3 -m py_compile";
  throw new CliError(
    `${describeProblems(problems)} (${tool}): nothing was uploaded. Fix it, or deploy with --no-check.`,
  );
}

/**
 * The function a deploy's hint calls: `run` if the module exports it (or its exports are not
 * known: no start check, or a runtime host older than the field), else its first export. The
 * hint named `run` for a module that exports only `handler`, and both calls it gave were 404s.
 */
export function functionToCall(exports: readonly string[] | undefined): string {
  if (!exports || exports.length === 0 || exports.includes("run")) return "run";
  return exports[0] as string;
}

export const deploy: Command = {
  name: "deploy",
  summary: "upload an app folder (runlet.toml + code) and make it the live version",
  usage: `Usage: runlet deploy [dir] [--no-check] [--no-start-check] [--json]

Packs the folder (default: the current one), uploads it through the management API and
switches the app to the new version. The folder needs a runlet.toml.

Before uploading, it checks runlet.toml as the control plane would, and that the code parses,
with this machine's interpreter: a managed app's (or a custom app run by node) .mjs, .js and
.cjs files with node --check, a custom app run by python3 its .py files with python3 -m
py_compile (when python3 is on PATH); node_modules is not checked, nor a custom app run by any
other program. A runlet.toml refused, or a file that does not parse, stops the deploy, saying
why (the field; the file and line): nothing is uploaded. So does a folder of more than 20 MiB
(the largest bundle the control plane takes), naming its largest files, one of more than
5000 files (the most a bundle holds), before they are read, naming its fullest folders, and a
managed app without main.mjs or main.js at its root (with --no-check too).

Then the control plane starts a replica of the new version on a runtime host before it makes
it live ("Starting a replica of the new version of hello…"): one that fails as it loads (a
package not in the folder, a name a module does not export, a Python ImportError, an
entrypoint that exits at once, a healthcheck that never answers 2xx within the app's
start_timeout, 30 s unless runlet.toml sets it, up to 1800), or a module
that exports no function, is refused with the app's error and its last output, exit code 1,
and the version before goes on answering. The replica that started
takes the new version's first call. With no runtime host up, the deploy is refused (503).

  --no-check         upload without those checks (this machine's Node or Python is older
                     than the runtime host's and refuses syntax the host takes, say; the control
                     plane still checks runlet.toml)
  --no-start-check   make the version live without starting a replica of it first: even if it
                     cannot start (its calls then fail until the next deploy), or no runtime
                     host is up`,
  options: { "no-check": { type: "boolean" }, "no-start-check": { type: "boolean" } },
  async run({ values, positionals }) {
    if (positionals.length > 1)
      throw new CliError(`give one app folder, not ${positionals.length}\n\n${deploy.usage}`);
    const dir = resolve(positionals[0] ?? ".");
    const manifest = await readFile(join(dir, "runlet.toml"), "utf8").catch(async () => {
      const kind = await stat(dir).then(
        (s) => (s.isDirectory() ? "folder" : "file"),
        () => undefined,
      );
      if (kind === undefined) throw new CliError(`there is no folder ${dir}: nothing was uploaded`);
      if (kind === "file")
        throw new CliError(`${dir} is a file: give the app's folder, the one with its runlet.toml`);
      throw new CliError(`${dir} has no runlet.toml: is it an app folder?`);
    });
    let parsed: Record<string, unknown>;
    try {
      parsed = parseToml(manifest);
    } catch (err) {
      throw new CliError(`runlet.toml is not valid TOML: ${describeTomlError(err)}`);
    }
    // The control plane's own check, before anything is packed or sent: a runlet.toml it refuses
    // was packed, uploaded and refused after "Starting a replica of the new version…".
    const checked = values["no-check"] ? undefined : appConfigSchema.safeParse(parsed);
    if (checked?.success === false)
      throw new CliError(
        // Not "or deploy with --no-check": the control plane checks runlet.toml the same way.
        `runlet.toml: ${describeConfigError(checked.error)}: nothing was uploaded. Fix it (the control plane refuses it too).`,
      );
    const name = String(parsed.name ?? "?");
    const config = await loadConfig();
    const started = performance.now();
    const { files, notes } = await collect(dir);
    for (const line of notes) console.error(line);
    checkBundleSize(files);
    // The control plane refuses it whatever --no-check says: it was packed, uploaded and refused
    // after "Starting a replica of the new version…".
    const missing = missingEntry(
      String(parsed.runtime ?? "managed"),
      files.map((f) => f.path),
    );
    if (missing) throw new CliError(`${missing}: nothing was uploaded`);
    if (!values["no-check"]) await checkCode(dir, parsed, files, values.json === true);
    const bytes = files.reduce((n, f) => n + Buffer.byteLength(f.contentBase64, "base64"), 0);
    if (!values.json)
      console.error(
        `Packing ${name}: ${files.length} file${files.length === 1 ? "" : "s"}, ${formatBytes(bytes)}`,
      );
    if (!values.json) console.error(`Deploying to project ${config.projectId}…`);
    const note = packagesNote(files.map((f) => f.path));
    if (note) console.error(note);
    const startCheck = !values["no-start-check"];
    // A start_timeout of minutes is a wait of minutes: said up front, then every 10 s (request).
    const limit = typeof parsed.start_timeout === "number" ? parsed.start_timeout : undefined;
    if (startCheck && !values.json)
      console.error(
        `Starting a replica of the new version of ${name} on a runtime host before it goes live${limit === undefined ? "" : ` (start_timeout ${limit} s)`}…`,
      );
    const app = await sendDeploy(config, "/apps", {
      body: { files },
      startCheck,
      what: "deploy",
    }).catch((err: unknown) => {
      throw withCheck(
        err,
        `runlet apps versions ${name} shows whether it was recorded (a version deployed just now); if it was not, the version before still answers, and sending it again is safe`,
      );
    });
    if (values.json) {
      console.log(JSON.stringify(app));
    } else {
      const ms = Math.round(performance.now() - started);
      console.log(`Deployed ${app.name} v${app.version} (${app.runtime} runtime) in ${ms} ms`);
      console.error(startedNote(app));
      const base = `${config.apiUrl}/v4/${config.projectId}/${app.name}`;
      if (app.runtime === "custom") {
        // Its own paths and methods: `runlet run` calls functions of managed apps. The token is
        // the one this command used: from RUNLET_TOKEN, or else from local.json.
        const token = process.env[ENV.token]
          ? `$${ENV.token}`
          : `$(node -p 'require(${JSON.stringify(homePaths(cliHome()).localJson)}).token')`;
        console.error(`Call it: curl -H "Authorization: Bearer ${token}" ${base}/`);
      } else {
        const fn = functionToCall(app.started?.exports);
        const named = fn === "run" ? "" : ` ${fn}`;
        console.error(`Call it: npx runlet run ${app.name}${named} --data '{}'`);
        console.error(`     or: POST ${base}/${encodeURIComponent(fn)}`);
      }
    }
    return 0;
  },
};
