/**
 * A caller's request body streamed on to the host, watched: when the caller's side breaks off
 * (its connection closed before the Content-Length's bytes came), the forward fails as it would
 * if the host had died. Which side failed decides who is blamed: a cut upload is the caller's,
 * and must not make the Worker pass over a healthy host (every call of the app elsewhere, or
 * refused as at capacity there, for seconds).
 */
export interface WatchedBody {
  stream: ReadableStream<Uint8Array>;
  /** Whether reading the caller's body failed (true only once it has). */
  cut(): boolean;
}

/** `body` of `length` bytes (its Content-Length), passed on whole with that length. */
export function watchedBody(body: ReadableStream<Uint8Array>, length: number): WatchedBody {
  let cut = false;
  const { readable, writable } = new FixedLengthStream(length);
  const pump = async () => {
    const reader = body.getReader();
    const writer = writable.getWriter();
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        cut = true;
        await writer.abort(err).catch(() => {});
        return;
      }
      if (chunk.done) return writer.close();
      await writer.write(chunk.value);
    }
  };
  // A failure on the host's side errors the fetch, which says so; nothing to add here.
  pump().catch(() => {});
  return { stream: readable, cut: () => cut };
}
