/**
 * What `runlet deploy` checks before it uploads anything: that the app's code parses, with the
 * interpreter on this machine. A deploy whose main.mjs had a SyntaxError was accepted and
 * replaced the working version; every call was then a 502 "the app failed to start".
 *
 * - A managed app, or a custom app whose entrypoint is `node`: every .mjs, .js and .cjs file
 *   outside node_modules, with `node --check` (this CLI's own Node), the entry first.
 * - A custom app whose entrypoint is `python3` or `python`: every .py file outside
 *   node_modules, with `python3 -m py_compile`, when python3 is on PATH (else not checked).
 * - Any other custom app (its own program) is not checked.
 *
 * Only the syntax: an import that fails at run time (a missing package, a wrong name) is still
 * seen at the first call. One process per file, a few at a time.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { basename, join } from "node:path";

export interface SyntaxProblem {
  /** The file, as uploaded (relative to the app folder). */
  path: string;
  line?: number;
  /** The interpreter's message: `SyntaxError: Unexpected number`. */
  message: string;
  /** The interpreter's excerpt of the source: the line and a caret under the fault. */
  excerpt: string[];
}

export type Language = "node" | "python";

/** What checks an app's code, from its runlet.toml (as parsed TOML); undefined: not checked. */
export function languageOf(manifest: Record<string, unknown>): Language | undefined {
  const runtime = manifest.runtime ?? "managed";
  if (runtime === "managed") return "node";
  const custom = manifest.custom as { entrypoint?: unknown } | undefined;
  const program = Array.isArray(custom?.entrypoint) ? custom.entrypoint[0] : undefined;
  if (typeof program !== "string") return undefined;
  const name = basename(program);
  if (name === "node" || name === "nodejs") return "node";
  if (/^python(3(\.\d+)?)?$/.test(name)) return "python";
  return undefined;
}

const EXTENSIONS: Record<Language, RegExp> = {
  node: /\.(mjs|js|cjs)$/,
  python: /\.py$/,
};

/** The files to check, of those uploaded: the entry (main.mjs, main.js) first. */
export function filesToCheck(paths: readonly string[], language: Language): string[] {
  const picked = paths.filter(
    (p) => EXTENSIONS[language].test(p) && !p.split("/").includes("node_modules"),
  );
  const first = (p: string) => (p === "main.mjs" ? 0 : p === "main.js" ? 1 : 2);
  return picked.sort((a, b) => first(a) - first(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** A check that has not ended in this long is given up (the file is then not checked). */
const CHECK_TIMEOUT_MS = 60_000;

interface Outcome {
  code: number | null;
  output: string;
  missing?: boolean;
}

function runCheck(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  return new Promise<Outcome>((done) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    for (const s of [child.stdout, child.stderr]) s.on("data", (d) => (output += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), CHECK_TIMEOUT_MS);
    child.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      done({ code: null, output: String(err), missing: err.code === "ENOENT" });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

/** Node's `node --check` output: `file:line`, the source line, a caret, then `SyntaxError: …`. */
export function nodeProblem(path: string, output: string): SyntaxProblem {
  const lines = output.split("\n");
  const line = Number(/:(\d+)$/.exec(lines[0] ?? "")?.[1]) || undefined;
  const at = lines.findIndex((l) => /^\w*Error\b/.test(l));
  const message = at >= 0 ? (lines[at] ?? "") : lines.find((l) => l.trim()) || "does not parse";
  const excerpt = line && at > 1 ? lines.slice(1, at).filter((l) => l.trim()) : [];
  return { path, line, message, excerpt };
}

/** Python's: `File "x.py", line 3`, the source line, a caret, `SyntaxError: …` (or `Sorry: …`). */
export function pythonProblem(path: string, output: string): SyntaxProblem {
  const lines = output.split("\n").filter((l) => l.trim());
  const line = Number(/line (\d+)/.exec(output)?.[1]) || undefined;
  const at = lines.findLastIndex((l) => /^(Sorry: )?\w*Error\b/.test(l));
  const message = (at >= 0 ? (lines[at] ?? "") : lines.at(-1) || "does not parse").replace(
    /^Sorry: /,
    "",
  );
  const from = lines.findIndex((l) => /^\s*File "/.test(l));
  const excerpt = from >= 0 && at > from ? lines.slice(from + 1, at) : [];
  return { path, line, message, excerpt };
}

/**
 * Checks `files` (relative to `dir`); the problems found, in the order of `files`, and notes on
 * what was not checked.
 */
export async function checkSyntax(
  dir: string,
  files: readonly string[],
  language: Language,
): Promise<{ problems: SyntaxProblem[]; notes: string[] }> {
  const notes: string[] = [];
  if (files.length === 0) return { problems: [], notes };
  // py_compile writes bytecode beside the file: elsewhere, so the app folder is left as it was.
  const cache = language === "python" ? await mkdtemp(join(tmpdir(), "runlet-pyc-")) : undefined;
  const env = cache ? { ...process.env, PYTHONPYCACHEPREFIX: cache } : process.env;
  const outcomes: (Outcome | undefined)[] = [];
  let next = 0;
  async function worker() {
    while (next < files.length) {
      const i = next++;
      const file = files[i] as string;
      outcomes[i] =
        language === "node"
          ? await runCheck(process.execPath, ["--check", file], dir, env)
          : await runCheck("python3", ["-m", "py_compile", file], dir, env);
      if (outcomes[i]?.missing) next = files.length; // no python3: nothing else will run either
    }
  }
  const width = Math.min(4, availableParallelism(), files.length);
  try {
    await Promise.all(Array.from({ length: width }, worker));
  } finally {
    if (cache) await rm(cache, { recursive: true, force: true });
  }
  if (outcomes.some((o) => o?.missing)) {
    notes.push("Not checked: python3 is not on PATH, so the Python files' syntax is not.");
    return { problems: [], notes };
  }
  const problems: SyntaxProblem[] = [];
  files.forEach((path, i) => {
    const outcome = outcomes[i];
    if (!outcome || outcome.code === 0) return;
    if (outcome.code === null) notes.push(`Not checked: ${path} (its check did not end).`);
    else
      problems.push(
        language === "node"
          ? nodeProblem(path, outcome.output)
          : pythonProblem(path, outcome.output),
      );
  });
  return { problems, notes };
}

/** The problems in one line: `main.mjs:2: SyntaxError: Unexpected number`, at most 3 named. */
export function describeProblems(problems: readonly SyntaxProblem[]): string {
  const shown = problems
    .slice(0, 3)
    .map((p) => `${p.path}${p.line ? `:${p.line}` : ""}: ${p.message}`);
  const more = problems.length > 3 ? `, and ${problems.length - 3} more file(s)` : "";
  return `${shown.join("; ")}${more}`;
}
