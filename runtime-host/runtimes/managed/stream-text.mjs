// How the managed runtime's shim (shim.mjs) makes text of what a call writes to one stream. A
// program may write a character of several bytes in pieces (a byte at a time, or cut wherever
// its buffer ended): the bytes of a character cut short wait for the rest of it. Plain
// JavaScript for plain `node`, as the shim is.
import { StringDecoder } from "node:string_decoder";

/** @param {unknown} encoding */
const isUtf8 = (encoding) =>
  typeof encoding !== "string" || encoding === "utf8" || encoding === "utf-8";

/** The text of one call's writes to one stream, as UTF-8. */
export class StreamText {
  #decoder = new StringDecoder("utf8");
  /** Whether the decoder may hold the first bytes of a character. */
  #holding = false;

  /**
   * The text of one `write` chunk: strings in their encoding, bytes as UTF-8, joined with the
   * bytes held from before. A string never continues a character cut short: those bytes are one
   * U+FFFD before it, as they would read on a terminal.
   * @param {unknown} chunk
   * @param {unknown} encoding
   * @returns {string}
   */
  of(chunk, encoding) {
    if (typeof chunk === "string" && (isUtf8(encoding) || !Buffer.isEncoding(String(encoding)))) {
      return this.end() + chunk;
    }
    if (typeof chunk !== "string" && !(chunk instanceof Uint8Array)) {
      return this.end() + String(chunk);
    }
    const bytes =
      typeof chunk === "string"
        ? Buffer.from(chunk, /** @type {BufferEncoding} */ (encoding))
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.#holding = true;
    return this.#decoder.write(bytes);
  }

  /** What is held (a character cut short, as U+FFFD); the decoder starts afresh. */
  end() {
    if (!this.#holding) return "";
    this.#holding = false;
    return this.#decoder.end();
  }
}
