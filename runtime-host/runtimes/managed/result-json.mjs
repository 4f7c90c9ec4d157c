// How the managed runtime's shim (shim.mjs) sends a function's result: as JSON, which cannot
// carry everything a function can return. Plain JavaScript for plain `node`, as the shim is.

/**
 * The function's result as its message carries it (`undefined` as null). Throws for a result
 * whose JSON is nothing: IPC would leave the message's `value` out. Only the top level needs a
 * look (below it, JSON leaves out what it cannot carry). A result with a `toJSON` is made JSON
 * here and sent as what that JSON reads, so that its `toJSON` runs once.
 * @param {unknown} value
 */
export function jsonValue(value) {
  if (value === undefined || value === null) return null;
  const toJSON = /** @type {{ toJSON?: unknown }} */ (value).toJSON;
  if (typeof toJSON !== "function") {
    if (typeof value === "function" || typeof value === "symbol")
      throw new Error(`it is a ${typeof value}`);
    return value;
  }
  /** @type {unknown} */
  let made;
  let top = true;
  const json = JSON.stringify(value, (_key, v) => {
    if (top) [top, made] = [false, v];
    return v;
  });
  if (json === undefined)
    throw new Error(
      `its toJSON() returned ${made === undefined ? "undefined" : `a ${typeof made}`}`,
    );
  return JSON.parse(json);
}
