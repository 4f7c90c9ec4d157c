// What `npm pack` ships (package.json "files"), as a project that installs Runlet gets it:
// everything `runlet/client`, `runlet/webhooks` and the `runlet` command need — each relative
// import of a shipped file resolves to a shipped file — and no tests, test helpers or local
// state (a `.runlet/` holds a token and keys).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT } from "./harness.ts";

const packed: string[] =
  (
    JSON.parse(
      execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
        cwd: ROOT,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      }),
    ) as Array<{ files: Array<{ path: string }> }>
  )[0]?.files.map((f) => f.path) ?? [];
const shipped = new Set(packed);

describe("the package npm pack makes", () => {
  it("holds the targets of package.json's exports and bin", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    const targets = [
      ...Object.values(pkg.exports as Record<string, string | Record<string, string>>).flatMap(
        (t) => (typeof t === "string" ? [t] : Object.values(t)),
      ),
      ...Object.values(pkg.bin as Record<string, string>),
    ].map((t) => normalize(t));
    expect(targets.filter((t) => !shipped.has(t))).toEqual([]);
    expect(shipped.has("README.md") && shipped.has("tsconfig.json")).toBe(true);
  });

  it("holds every file a shipped module imports", () => {
    const missing: string[] = [];
    for (const file of packed.filter((f) => /\.(ts|tsx|mts|mjs)$/.test(f))) {
      const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), "utf8"));
      for (const { fileName } of importedFiles) {
        if (!fileName.startsWith(".")) continue;
        const target = normalize(join(dirname(file), fileName));
        const found = [target, `${target}.ts`, `${target}.tsx`, join(target, "index.ts")];
        if (!found.some((f) => shipped.has(f))) missing.push(`${file} → ${fileName}`);
      }
    }
    expect(packed.length).toBeGreaterThan(100);
    expect(missing).toEqual([]);
  });

  it("holds no tests, test helpers, benchmarks or local state", () => {
    const unwanted = packed.filter((f) =>
      /\.test\.tsx?$|test-support|(^|\/)(test|testing|bench|chaos|\.ci|\.runlet|\.wrangler|dist)\/|\.log$|^vitest\.config/.test(
        f,
      ),
    );
    expect(unwanted).toEqual([]);
  });
});
