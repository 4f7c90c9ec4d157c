/**
 * The CLI's version, package.json's (`runlet --version`), and the User-Agent every request it
 * sends carries: imported, so the compiled CLI (bin/compiled.mjs, which builds again when
 * package.json changes) holds it as the sources run through tsx read it.
 */
import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;

/** `runlet-cli/0.1.0 (node v22.1.0)`: the audit log records it beside each request. */
export const USER_AGENT = `runlet-cli/${VERSION} (node ${process.version})`;
