export type LogStream = "stdout" | "stderr";

export interface LogChunk {
  stream: LogStream;
  /** Milliseconds since the epoch when the host read the chunk. */
  at: number;
  data: Buffer;
}

/** The newest `capacity` bytes a replica wrote to stdout and stderr; older bytes are dropped. */
export class LogRing {
  readonly #chunks: LogChunk[] = [];
  #size = 0;
  #dropped = 0;

  constructor(readonly capacity: number) {}

  append(stream: LogStream, data: Buffer, at: number = Date.now()): void {
    if (data.length === 0) return;
    const kept = data.length > this.capacity ? data.subarray(data.length - this.capacity) : data;
    this.#dropped += data.length - kept.length;
    this.#chunks.push({ stream, at, data: kept });
    this.#size += kept.length;
    while (this.#size > this.capacity) {
      const first = this.#chunks[0];
      if (!first) break;
      const excess = this.#size - this.capacity;
      if (first.data.length <= excess) {
        this.#chunks.shift();
        this.#size -= first.data.length;
        this.#dropped += first.data.length;
      } else {
        first.data = first.data.subarray(excess);
        this.#size -= excess;
        this.#dropped += excess;
      }
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
    return this.#chunks.map((c) => ({ ...c }));
  }

  /** Everything held, both streams interleaved in arrival order. */
  text(): string {
    return Buffer.concat(this.#chunks.map((c) => c.data)).toString("utf8");
  }
}
