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

  /** Decoders of `read`, per stream: they hold the first bytes of a character cut short. */
  readonly #decoders: Partial<Record<LogStream, StringDecoder>> = {};

  constructor(
    readonly capacity: number,
    readonly maxChunks: number = LOG_RING_CHUNKS,
  ) {}

  /**
   * Text as bytes of UTF-8. Past capacity the oldest bytes go, and with them the rest of a
   * character they cut (up to the next byte that begins one).
   */
  append(stream: LogStream, data: Buffer, at: number = Date.now()): void {
    if (data.length === 0) return;
    this.#chunks.push({ stream, at, data });
    this.#size += data.length;
    while (this.#size > this.capacity) {
      const first = this.#chunks[this.#first];
      if (!first) break;
      const kept = fromCharStart(first.data, this.#size - this.capacity);
      this.#size -= first.data.length - kept.length;
      this.#dropped += first.data.length - kept.length;
      if (kept.length === 0) this.#first++;
      else first.data = kept;
    }
    while (this.#chunks.length - this.#first > this.maxChunks) {
      const first = this.#chunks[this.#first++] as LogChunk;
      this.#size -= first.data.length;
      this.#dropped += first.data.length;
    }
    // Not `shift()` each time: that moves every chunk held, and a ring of small chunks (a
    // flood of short lines) spent tens of microseconds per line there.
    if (this.#first > 1024 && this.#first * 2 > this.#chunks.length) {
      this.#chunks = this.#chunks.slice(this.#first);
      this.#first = 0;
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
    return this.#held().map((c) => ({ ...c }));
  }

  /** Everything held, both streams interleaved in arrival order. */
  text(): string {
    return Buffer.concat(this.#held().map((c) => c.data)).toString("utf8");
  }

  #held(): LogChunk[] {
    return this.#chunks.slice(this.#first);
  }
}

/** `data` from `start` on, past what is left there of a character cut (3 bytes at most). */
function fromCharStart(data: Buffer, start: number): Buffer {
  let from = Math.min(start, data.length);
  const limit = Math.min(from + 3, data.length);
  while (from < limit && ((data[from] as number) & 0xc0) === 0x80) from++;
  return data.subarray(from);
}
