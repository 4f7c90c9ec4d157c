/**
 * The 404 of a call of a function a managed app does not export, naming those it does: said by
 * the runtime host that loaded the module, and by the Worker for an async call of a version
 * whose functions its start check found. Import-free: the Worker reads it too.
 */

/** Names at most this many of an app's exports in a call's 404. */
const EXPORTS_NAMED = 20;

/** How that message begins, whatever the app exports (`runlet run` tells a run was made by it). */
export const noFunctionHead = (app: string, fn: string) => `app '${app}' has no function '${fn}'`;

/** A call of a function the app does not export: the message names those it does. */
export function noFunction(app: string, fn: string, exports: readonly string[]): string {
  const named = exports.slice(0, EXPORTS_NAMED).map((name) => name.slice(0, 100));
  const more = exports.length > named.length ? ` and ${exports.length - named.length} more` : "";
  const which =
    named.length === 0 ? "it exports no function" : `it exports: ${named.join(", ")}${more}`;
  return `${noFunctionHead(app, fn)} (${which})`;
}
