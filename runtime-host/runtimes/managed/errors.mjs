// How the managed runtime's shim (shim.mjs) shows an app's errors: the caller gets a message
// without the host's paths, the run's log a stack as the app's author reads it. Plain JavaScript
// for plain `node`, as the shim is.
import { pathToFileURL } from "node:url";

/** The most of a thrown object's JSON that its error message shows. */
const THROWN_JSON_CHARS = 1000;

/** This runtime's own folder: its frames are in every stack, and name the host's files. */
const RUNTIME_URL = new URL(".", import.meta.url).href;

/**
 * An error's message, or the thrown value's: an object's own `message`, else its JSON (`throw {
 * code: 42 }` reads `{"code":42}`, not `[object Object]`), else the value as a string.
 */
function thrownText(/** @type {unknown} */ thrown) {
  if (thrown instanceof Error) return thrown.message;
  if (typeof thrown !== "object" || thrown === null) return String(thrown);
  const { message } = /** @type {{ message?: unknown }} */ (thrown);
  if (typeof message === "string") return message;
  const json = JSON.stringify(thrown) ?? String(thrown);
  return json.length > THROWN_JSON_CHARS ? `${json.slice(0, THROWN_JSON_CHARS)}…` : json;
}

/** The ways to show errors of the app in `appDir`, its folder written as `.`. */
export function appErrors(/** @type {string} */ appDir) {
  const appUrl = pathToFileURL(appDir).href;

  /** `text` with the app's folder written as `.` (the host's paths are not the app's business). */
  function relative(/** @type {string} */ text) {
    for (const prefix of [appUrl, appDir]) {
      text = text.replaceAll(`${prefix}/`, "./").replaceAll(prefix, ".");
    }
    return text;
  }

  return {
    /** An error's text for the caller, without host paths (see `thrownText`). */
    describe(/** @type {unknown} */ thrown) {
      let text;
      try {
        text = thrownText(thrown);
      } catch {
        text = "a value that cannot be shown";
      }
      return relative(text);
    },

    /** A stack as the app's author reads it: the app's folder as `.`, without this runtime's frames. */
    appStack(/** @type {string} */ stack) {
      const own = stack.split("\n").filter((line) => !line.includes(RUNTIME_URL));
      return relative(own.join("\n"));
    },

    /**
     * What a run wrote, as its log shows it: the app's folder as `.`, this runtime's files as
     * `runlet:` (`console.error(err)` printed the host's own paths in the shim's frames).
     */
    hidePaths(/** @type {string} */ text) {
      return relative(text.replaceAll(RUNTIME_URL, "runlet:"));
    },

    /** Where in the app's own files an error was thrown: `./lib/h.mjs:3`, if its stack says. */
    whereIn(/** @type {unknown} */ err) {
      const stack = err instanceof Error ? String(err.stack) : "";
      const escaped = appDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      const found = new RegExp(`(?:file://)?${escaped}/([^\\s:)]+):(\\d+)`).exec(stack);
      return found ? `./${found[1]}:${found[2]}` : undefined;
    },
  };
}
