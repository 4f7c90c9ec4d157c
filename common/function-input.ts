/**
 * A managed function's input is its request body as JSON, a blank body being `null`: checked by
 * the runtime host for a call, and by the Worker before it accepts an async run. Imports
 * nothing: the Worker bundles it.
 */

export const NOT_JSON = "request body is not valid JSON";

/** The input of a body's text; undefined when it is not JSON (JSON never gives undefined). */
export function functionInput(text: string): unknown {
  if (text.trim() === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
