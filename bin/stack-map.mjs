/**
 * Stack traces of a compiled module (bin/compiled.mjs) that name the TypeScript sources, with
 * the module's source map read only when a stack that passes through it is first formatted.
 * Node's own source maps (`process.setSourceMapsEnabled`) decode and parse a module's whole map
 * as it loads: about 80 ms of CPU, a fifth of a `runlet` command, paid by every command
 * (`npm run bench:cli`) though almost none ever prints a stack.
 */
import { readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { fileURLToPath } from "node:url";

/**
 * Maps the frames of the module at `url` (a file URL, its map at `${url}.map`) in every stack
 * formatted from now on. Nothing to do where Node maps them itself (`--enable-source-maps`: it
 * reads the map the module names).
 * @param {string} url
 */
export function mapStacks(url) {
  if (process.sourceMapsEnabled) return;
  const mapUrl = `${url}.map`;
  /** @type {SourceMap | null | undefined} undefined: not read yet; null: none to be had */
  let map;
  const read = () => {
    try {
      return new SourceMap(JSON.parse(readFileSync(fileURLToPath(mapUrl), "utf8")));
    } catch {
      return null; // a stack naming the module's own lines is still a stack
    }
  };
  /** @param {NodeJS.CallSite} frame */
  const located = (frame) => {
    const text = String(frame);
    const line = frame.getLineNumber();
    const column = frame.getColumnNumber();
    if (frame.getFileName() !== url || line === null || column === null) return text;
    map ??= read();
    const entry = map?.findEntry(line - 1, column - 1);
    if (!entry || !("originalSource" in entry)) return text;
    const source = fileURLToPath(new URL(entry.originalSource, mapUrl));
    const where = `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
    return text.replace(`${url}:${line}:${column}`, where);
  };
  Error.prepareStackTrace = (error, frames) => {
    let head;
    try {
      head = Error.prototype.toString.call(error);
    } catch {
      head = "Error";
    }
    return head + frames.map((frame) => `\n    at ${located(frame)}`).join("");
  };
}
