/**
 * Where workerd's answers on one connection begin and end, read from its bytes as they pass
 * (worker-joint.ts). workerd closes a connection for being idle only between answers; a close
 * in the middle of one (an app's answer that broke off, after however long a pause) cuts it
 * short, and the client has to see that close to know.
 *
 * An answer's end is known from its head: `Transfer-Encoding: chunked` or `Content-Length`, else
 * it has no body. workerd frames every body it sends so (chunked where it does not know the
 * length, to HTTP/1.0 clients too), never until the close; its answers to HEAD carry neither
 * (measured with workerd of wrangler 4.72). Anything else — another transfer coding, a 101,
 * a head that does not parse or is over 64 KiB — makes the connection's close the end of an
 * answer from then on: `between` stays false, and the close is passed on as it would have been.
 */

/** A head larger than this is not workerd's (its own limit for a request's is about 128 KiB). */
const MAX_HEAD_BYTES = 64 * 1024;

type State =
  | { at: "head"; text: string }
  | { at: "body"; left: number }
  | { at: "size"; text: string }
  | { at: "chunk"; left: number }
  | { at: "trailers"; text: string }
  | { at: "unframed" };

export class AnswerFraming {
  #state: State = { at: "head", text: "" };

  /** The last answer ended (or none began): a close here ends no answer. */
  get between(): boolean {
    return this.#state.at === "head" && this.#state.text === "";
  }

  read(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && this.#state.at !== "unframed") at = this.#step(chunk, at);
  }

  /** Reads from `at` as far as the current state goes; returns where it stopped. */
  #step(chunk: Buffer, at: number): number {
    const state = this.#state;
    if (state.at === "unframed") return chunk.length;
    if (state.at === "body" || state.at === "chunk") {
      const taken = Math.min(state.left, chunk.length - at);
      state.left -= taken;
      if (state.left === 0) {
        this.#state = state.at === "body" ? { at: "head", text: "" } : { at: "size", text: "" };
      }
      return at + taken;
    }
    // A head ends with an empty line; a chunk's size and each of its trailers are a line.
    const stop = endOf(state.text, chunk, at, state.at === "head" ? "\r\n\r\n" : "\n");
    if (stop < 0) {
      // latin1: one character per byte.
      state.text += chunk.toString("latin1", at);
      if (state.text.length > MAX_HEAD_BYTES) this.#state = { at: "unframed" };
      return chunk.length;
    }
    const text = state.text + chunk.toString("latin1", at, stop);
    if (state.at === "head") this.#state = headState(text);
    else if (state.at === "trailers") {
      this.#state = text.trim() ? { at: "trailers", text: "" } : { at: "head", text: "" };
    } else {
      const size = text.trim().split(";")[0] ?? "";
      if (!/^[0-9a-fA-F]{1,12}$/.test(size)) this.#state = { at: "unframed" };
      else if (Number.parseInt(size, 16) === 0) this.#state = { at: "trailers", text: "" };
      else this.#state = { at: "chunk", left: Number.parseInt(size, 16) + 2 }; // data and CRLF
    }
    return stop;
  }
}

/** Where in `chunk`, read from `at` after `kept`, the first `end` ends; -1 if it does not. */
function endOf(kept: string, chunk: Buffer, at: number, end: string): number {
  // An end begun in `kept` (which holds none whole) and ended in `chunk` comes first.
  for (let k = Math.min(end.length - 1, kept.length); k >= 1; k--) {
    const rest = end.length - k;
    if (
      kept.endsWith(end.slice(0, k)) &&
      chunk.toString("latin1", at, at + rest) === end.slice(k)
    ) {
      return at + rest;
    }
  }
  const found = chunk.indexOf(end, at, "latin1");
  return found < 0 ? -1 : found + end.length;
}

/** What follows an answer's head. */
function headState(head: string): State {
  const [status = "", ...lines] = head.split("\r\n");
  const code = /^HTTP\/1\.[01] (\d{3})/.exec(status)?.[1];
  if (!code) return { at: "unframed" };
  const number = Number(code);
  if ((number >= 100 && number < 200 && number !== 101) || number === 204 || number === 304) {
    return { at: "head", text: "" };
  }
  if (number === 101) return { at: "unframed" };
  const field = (name: string) =>
    lines
      .filter((line) => line.slice(0, line.indexOf(":")).trim().toLowerCase() === name)
      .map((line) => line.slice(line.indexOf(":") + 1).trim());
  const encoding = field("transfer-encoding");
  if (encoding.length) {
    const last = encoding.join(",").split(",").at(-1)?.trim().toLowerCase();
    return last === "chunked" ? { at: "size", text: "" } : { at: "unframed" };
  }
  const [length, ...more] = field("content-length");
  if (length === undefined) return { at: "head", text: "" };
  if (more.length || !/^\d{1,15}$/.test(length)) return { at: "unframed" };
  const left = Number(length);
  return left === 0 ? { at: "head", text: "" } : { at: "body", left };
}
