/**
 * A managed function's input is its request body as JSON, a blank body being `null`: checked by
 * the runtime host for a call, and by the Worker before it accepts an async run. Imports
 * nothing: the Worker bundles it.
 */

/**
 * What a caller can do instead, said after either refusal: a file sent as the body itself
 * (`curl -F file=@x`, `--data-binary @image.png`), as to Replicate or Modal's web endpoints, was
 * refused with "request body is not valid JSON" alone, naming neither way to send it.
 */
const INSTEAD =
  "a managed function's input is a JSON body: send a file in it as a base64 string, or deploy a custom app, which gets the body's bytes as they are";
const NOT_JSON = `request body is not valid JSON: ${INSTEAD}`;

/**
 * The deepest nesting of arrays and objects an input may have. The host hands the input to its
 * replica as JSON, whose serializer recurses: about 4,500 levels overflowed its stack and took
 * the replica down with the calls it was running.
 */
export const MAX_INPUT_DEPTH = 1_000;

export type FunctionInput = { ok: true; value: unknown } | { ok: false; message: string };

/**
 * The input of a body's bytes: UTF-8, as JSON requires (RFC 8259), refused otherwise — a lenient
 * decoder had made "caf\xe9" the input "caf\ufffd" without a word.
 */
export function functionInputOf(body: Uint8Array | ArrayBuffer): FunctionInput {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(body);
  } catch {
    return { ok: false, message: `request body is not valid UTF-8: ${INSTEAD}` };
  }
  return functionInput(text);
}

/** The input of a body's text, or why it cannot be one (the caller's 400). */
export function functionInput(body: string): FunctionInput {
  // A UTF-8 byte-order mark is not the JSON's (RFC 8259 lets a parser ignore it). The Worker's
  // TextDecoder dropped it and the host's Buffer kept it: a sync call was 400, an async one 202.
  const text = body.charCodeAt(0) === 0xfeff ? body.slice(1) : body;
  if (text.trim() === "") return { ok: true, value: null };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, message: NOT_JSON };
  }
  if (depthOf(text) > MAX_INPUT_DEPTH)
    return {
      ok: false,
      message: `request body nests arrays and objects deeper than ${MAX_INPUT_DEPTH} levels`,
    };
  return { ok: true, value };
}

/** The deepest nesting of `[` and `{` in valid JSON text (brackets inside strings not counted). */
function depthOf(json: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}
