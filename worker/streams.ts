import { concatBytes } from "../common/bytes.ts";

/** Reads at most `limit` bytes of a stream; undefined if it holds more (the rest is cancelled). */
export async function readCapped(
  stream: ReadableStream<Uint8Array>,
  limit: number,
): Promise<ArrayBuffer | undefined> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    size += r.value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(r.value);
  }
  return concatBytes(chunks).buffer;
}
