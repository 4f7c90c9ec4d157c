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
  const streamed = streamedKind(value);
  if (streamed)
    throw new Error(
      `it is ${streamed}, which a managed function cannot stream: it answers with one JSON value (a custom app can stream its answer)`,
    );
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

/**
 * What a result is when it is meant to be read piece by piece — a stream, a generator, a
 * `Response` — or undefined. Their JSON is `{}`: a function that yields tokens answered 200
 * with `{}`, its output gone, where it must fail saying why.
 * @param {unknown} value
 * @returns {string | undefined}
 */
function streamedKind(value) {
  if (typeof value !== "object" || value === null) return undefined;
  if (typeof Response === "function" && value instanceof Response) return "a Response";
  if (Symbol.asyncIterator in value) return "an async iterable (a stream or an async generator)";
  const next = /** @type {{ next?: unknown }} */ (value).next;
  if (Symbol.iterator in value && typeof next === "function") return "an iterator (a generator)";
  return undefined;
}
