import { StringDecoder } from "node:string_decoder";
import { LOG_RING_CHUNKS } from "../limits.ts";

export type LogStream = "stdout" | "stderr";

export interface LogChunk {
  stream: LogStream;
  /** Milliseconds since the epoch when the host read the chunk. */
  at: number;
  data: Buffer;
}

/**
 * The newest `capacity` bytes a replica wrote to stdout and stderr, in at most `maxChunks`
 * pieces (LOG_RING_CHUNKS: a piece costs far more than its bytes when they are few); older
 * bytes are dropped.
 */
export class LogRing {
  /** The chunks held are those from `#first` on: a full ring drops one per append, at times. */
  #chunks: LogChunk[] = [];
  #first = 0;
  #size = 0;
  #dropped = 0;
  /** Chunks held per stream. */
  readonly #held: Record<LogStream, number> = { stdout: 0, stderr: 0 };
  /** Streams whose oldest bytes held (or next ones) continue a line whose start was dropped. */
  readonly #midLine = new Set<LogStream>();

  /** Decoders of `read`, per stream: they hold the first bytes of a character cut short. */
  readonly #decoders: Partial<Record<LogStream, StringDecoder>> = {};

  constructor(
    readonly capacity: number,
    readonly maxChunks: number = LOG_RING_CHUNKS,
  ) {}

  /**
   * Text as bytes of UTF-8. Past capacity the oldest bytes go, and with them the rest of a
   * character they cut (up to the next byte that begins one), and the rest of a line they cut
   * (up to its stream's next newline): what is shown begins at the start of a line. A line whose
   * rest is longer than 4 KiB is kept, cut, rather than lose much of a stream with few newlines.
   */
  append(stream: LogStream, data: Buffer, at: number = Date.now()): void {
    if (data.length === 0) return;
    this.#chunks.push({ stream, at, data });
    this.#held[stream]++;
    this.#size += data.length;
    while (this.#size > this.capacity) {
      const first = this.#chunks[this.#first];
      if (!first) break;
      this.#cut(this.#first, fromCharStart(first.data, this.#size - this.capacity));
    }
    while (this.#chunks.length - this.#first > this.maxChunks) this.#cut(this.#first, EMPTY);
    for (const cut of this.#midLine) this.#toLineStart(cut);
    // Not `shift()` each time: that moves every chunk held, and a ring of small chunks (a
    // flood of short lines) spent tens of microseconds per line there.
    if (this.#first > 1024 && this.#first * 2 > this.#chunks.length) {
      this.#chunks = this.#chunks.slice(this.#first);
      this.#first = 0;
    }
  }

  /** Chunk `i` keeps `kept`, its end: the bytes before go (counted), and an empty chunk too. */
  #cut(i: number, kept: Buffer): void {
    const chunk = this.#chunks[i] as LogChunk;
    const gone = chunk.data.length - kept.length;
    if (gone === 0) return;
    if (chunk.data[gone - 1] === NEWLINE) this.#midLine.delete(chunk.stream);
    else this.#midLine.add(chunk.stream);
    this.#size -= gone;
    this.#dropped += gone;
    if (kept.length > 0) chunk.data = kept;
    else if (i === this.#first) this.#first++;
    else this.#chunks.splice(i, 1);
    if (kept.length === 0) this.#held[chunk.stream]--;
  }

  /**
   * The stream's oldest bytes held continue a line dropped: they go, up to its next newline, if
   * it comes soon (in its first LINE_REST_BYTES, within LINE_REST_CHUNKS pieces held).
   */
  #toLineStart(stream: LogStream): void {
    if (this.#held[stream] === 0) return; // its next output may still continue that line
    this.#midLine.delete(stream);
    const before: number[] = []; // the stream's pieces before the one with the newline
    let bytes = 0;
    const last = Math.min(this.#chunks.length, this.#first + LINE_REST_CHUNKS);
    for (let i = this.#first; i < last && bytes < LINE_REST_BYTES; i++) {
      const { stream: of, data } = this.#chunks[i] as LogChunk;
      if (of !== stream) continue;
      const end = data.indexOf(NEWLINE);
      if (end === -1) {
        before.push(i);
        bytes += data.length;
        continue;
      }
      if (bytes + end >= LINE_REST_BYTES) return;
      // From the last: a piece spliced out moves none before it.
      this.#cut(i, data.subarray(end + 1));
      for (const j of before.reverse()) this.#cut(j, EMPTY);
      this.#midLine.delete(stream);
      return;
    }
  }

  /**
   * Bytes as read from a process's stdout or stderr, in chunks cut anywhere: a character cut
   * between two chunks is held until its rest comes, so that each chunk is whole characters.
   */
  read(stream: LogStream, data: Buffer, at: number = Date.now()): void {
    const decoder = this.#decoders[stream] ?? new StringDecoder("utf8");
    this.#decoders[stream] = decoder;
    this.append(stream, Buffer.from(decoder.write(data)), at);
  }

  /** The process's output has ended: a character it cut short is appended as U+FFFD. */
  endReads(at: number = Date.now()): void {
    for (const [stream, decoder] of Object.entries(this.#decoders)) {
      this.append(stream as LogStream, Buffer.from(decoder.end()), at);
    }
  }

  /** Bytes held now (at most `capacity`). */
  get size(): number {
    return this.#size;
  }

  /** Bytes written but no longer held. */
  get dropped(): number {
    return this.#dropped;
  }

  chunks(): readonly LogChunk[] {
    return this.#heldChunks().map((c) => ({ ...c }));
  }

  /** Everything held, both streams interleaved in arrival order. */
  text(): string {
    return Buffer.concat(this.#heldChunks().map((c) => c.data)).toString("utf8");
  }

  #heldChunks(): LogChunk[] {
    return this.#chunks.slice(this.#first);
  }
}

const NEWLINE = 0x0a;
/** How far past a cut the rest of its line is looked for: a longer one is kept, cut. */
const LINE_REST_BYTES = 4096;
const LINE_REST_CHUNKS = 16;
const EMPTY = Buffer.alloc(0);

/** `data` from `start` on, past what is left there of a character cut (3 bytes at most). */
function fromCharStart(data: Buffer, start: number): Buffer {
  let from = Math.min(start, data.length);
  const limit = Math.min(from + 3, data.length);
  while (from < limit && ((data[from] as number) & 0xc0) === 0x80) from++;
  return data.subarray(from);
}
