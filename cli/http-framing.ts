/**
 * Where the requests and answers on one connection to workerd begin and end, read from the
 * bytes as they pass (worker-joint.ts). workerd closes a connection for being idle only when
 * every request on it has had its whole answer; a close in the middle of an answer (an app's
 * answer that broke off, after however long a pause) cuts it short, and a close with a request
 * unanswered leaves it so: the client has to see either close to know.
 *
 * A message's end is known from its head: `Transfer-Encoding: chunked` or `Content-Length`,
 * else it has no body. workerd frames every body it sends so (chunked where it does not know
 * the length, to HTTP/1.0 clients too), never until the close; its answers to HEAD carry
 * neither (measured with workerd of wrangler 4.72). A request without either has no body
 * (RFC 9112). Anything else — another transfer coding, a 101, a head that does not parse or is
 * larger than workerd reads — leaves the framing `lost` from then on: the connection's close
 * is passed on as it would have been.
 */

/** Larger than any head workerd reads (a request's at most about 128 KiB) or writes. */
const MAX_HEAD_BYTES = 160 * 1024;

/**
 * A line or a head being read: its pieces as they came, and its last characters apart (where
 * its end is looked for). Kept as one growing string whose end was looked at after each piece,
 * a head sent a byte at a time cost time in its square: 150 KB of head took 3.8 s of the worker's
 * process, every connection waiting meanwhile (55 ms now).
 */
interface Text {
  at: "head" | "size" | "trailers";
  pieces: string[];
  size: number;
  tail: string;
}

type State =
  | Text
  | { at: "body"; left: number }
  | { at: "chunk"; left: number }
  | { at: "unframed" };

const text = (at: Text["at"]): Text => ({ at, pieces: [], size: 0, tail: "" });

export class Framing {
  #state: State = text("head");
  /** Whole messages read: requests, or answers other than 1xx. */
  ended = 0;

  constructor(readonly of: "requests" | "answers") {}

  /** The last message ended (or none began). */
  get between(): boolean {
    return this.#state.at === "head" && this.#state.size === 0;
  }

  /** Its ends can no longer be told (see above). */
  get lost(): boolean {
    return this.#state.at === "unframed";
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
      if (state.left === 0 && state.at === "chunk") this.#state = text("size");
      else if (state.left === 0) this.#end();
      return at + taken;
    }
    // A head ends with an empty line; a chunk's size and each of its trailers are a line.
    const stop = endOf(state.tail, chunk, at, state.at === "head" ? "\r\n\r\n" : "\n");
    if (stop < 0) {
      // latin1: one character per byte.
      const piece = chunk.toString("latin1", at);
      state.pieces.push(piece);
      state.size += piece.length;
      state.tail = (piece.length >= 3 ? piece : state.tail + piece).slice(-3);
      if (state.size > MAX_HEAD_BYTES) this.#state = { at: "unframed" };
      return chunk.length;
    }
    const line = state.pieces.join("") + chunk.toString("latin1", at, stop);
    // However the bytes came: a head read whole in one chunk is held to the same bound.
    if (line.length > MAX_HEAD_BYTES) this.#state = { at: "unframed" };
    else if (state.at === "head") {
      const next = headState(line, this.of);
      if (next === "ended") this.#end();
      else this.#state = next;
    } else if (state.at === "trailers") {
      if (line.trim()) this.#state = text("trailers");
      else this.#end();
    } else {
      const size = line.trim().split(";")[0] ?? "";
      if (!/^[0-9a-fA-F]{1,12}$/.test(size)) this.#state = { at: "unframed" };
      else if (Number.parseInt(size, 16) === 0) this.#state = text("trailers");
      else this.#state = { at: "chunk", left: Number.parseInt(size, 16) + 2 }; // data and CRLF
    }
    return stop;
  }

  #end() {
    this.#state = text("head");
    this.ended++;
  }
}

/**
 * Where in `chunk`, read from `at` after `kept` (the text's last characters), the first `end`
 * ends; -1 if it does not.
 */
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

/** What follows a message's head: "ended" for a whole message without a body. */
function headState(head: string, of: Framing["of"]): State | "ended" {
  const [first = "", ...lines] = head.split("\r\n");
  if (of === "requests") {
    if (!/^[A-Za-z]+ \S+ HTTP\/1\.[01]$/.test(first)) return { at: "unframed" };
  } else {
    const code = Number(/^HTTP\/1\.[01] (\d{3})/.exec(first)?.[1]);
    if (!code || code === 101) return { at: "unframed" };
    if (code < 200) return text("head"); // 100 Continue: its answer follows
    if (code === 204 || code === 304) return "ended";
  }
  const field = (name: string) =>
    lines
      .filter((line) => line.slice(0, line.indexOf(":")).trim().toLowerCase() === name)
      .map((line) => line.slice(line.indexOf(":") + 1).trim());
  const encoding = field("transfer-encoding");
  if (encoding.length) {
    const last = encoding.join(",").split(",").at(-1)?.trim().toLowerCase();
    return last === "chunked" ? text("size") : { at: "unframed" };
  }
  const [length, ...more] = field("content-length");
  if (length === undefined) return "ended";
  if (more.length || !/^\d{1,15}$/.test(length)) return { at: "unframed" };
  const left = Number(length);
  return left === 0 ? "ended" : { at: "body", left };
}
