// The product's shape: no import cycle among its modules, type-only imports included (a folder
// whose files import each other in a circle wants another shape: a small module both can
// import); components that share only common/; and no file much over 300 lines unless it says
// why (a long file is a sign the design wants another shape).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT } from "./harness.ts";

const FOLDERS = ["common", "worker", "control-plane", "runtime-host", "cli", "webhooks", "client"];
const SOURCE = /\.(ts|tsx|mts|mjs)$/;

function sourcesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourcesUnder(path));
    else if (SOURCE.test(name) && !/\.test\.tsx?$/.test(name)) out.push(path);
  }
  return out;
}

/** Each file's relative imports (`import`, `import type`, `export … from`), resolved to files. */
function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    graph.set(
      file,
      importedFiles
        .map((i) => i.fileName)
        .filter((name) => name.startsWith("."))
        .map((name) => resolve(dirname(file), name))
        .filter((path) => known.has(path)),
    );
  }
  return graph;
}

/** The graph's cycles: its strongly connected components of more than one file (Tarjan). */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.includes(v)) cycles.push(component);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

describe("imports", () => {
  const files = FOLDERS.flatMap((f) => sourcesUnder(join(ROOT, f)));
  const graph = importGraph(files);

  it("form no cycle, type-only imports included", () => {
    const cycles = cyclesOf(graph).map((c) => c.map((f) => relative(ROOT, f)).sort());
    expect(cycles).toEqual([]);
  });

  it("are seen by the check: a known chain of imports is in the graph", () => {
    // Guards the check itself: if no import were resolved, no cycle could ever be found.
    const edges = [...graph.values()].reduce((n, targets) => n + targets.length, 0);
    expect(files.length).toBeGreaterThan(100);
    expect(edges).toBeGreaterThan(files.length);
    expect(
      cyclesOf(
        new Map([
          ["a", ["b"]],
          ["b", ["c"]],
          ["c", ["a"]],
        ]),
      ),
    ).toHaveLength(1);
  });

  it("stay inside their component: worker, control plane and runtime host share only common/", () => {
    const components = ["worker", "control-plane", "runtime-host"];
    const crossings: string[] = [];
    for (const [from, targets] of graph) {
      const own = components.find((c) => relative(ROOT, from).startsWith(`${c}/`));
      if (!own) continue;
      for (const to of targets) {
        const other = components.find((c) => relative(ROOT, to).startsWith(`${c}/`));
        if (other && other !== own)
          crossings.push(`${relative(ROOT, from)} → ${relative(ROOT, to)}`);
      }
    }
    expect(crossings).toEqual([]);
  });

  it("take zod's functions, not its `z` object, which brings all its locales along", () => {
    // `import { z } from "zod"` is an object holding every export, so a bundle keeps them all:
    // 750 KB of a `runlet` command's 1 MB, 60 ms of compiling for each command
    // (docs/benchmarks.md, bench:cli). `import * as z` keeps only what is used (190 KB).
    const named = /import\s+\{([^}]*)\}\s*from\s*"zod(?:\/v4)?"/g;
    const offenders = files.filter((file) =>
      [...readFileSync(file, "utf8").matchAll(named)].some(([, names = ""]) =>
        names.split(",").some((name) => name.trim() === "z"),
      ),
    );
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });
});

/** Lines past which a product file must say why it is long ("Over 300 lines …"). */
const LONG = 310;

describe("files", () => {
  it("stay under about 300 lines, or say why", () => {
    const product = FOLDERS.flatMap((f) => sourcesUnder(join(ROOT, f))).filter(
      (f) => !/test-support|\/testing\//.test(f),
    );
    const unexplained = product
      .map((f) => ({ file: relative(ROOT, f), text: readFileSync(f, "utf8") }))
      .filter(({ text }) => text.split("\n").length > LONG && !/Over 300 lines/.test(text))
      .map(({ file, text }) => `${file} (${text.split("\n").length} lines)`);
    expect(unexplained).toEqual([]);
  });
});
