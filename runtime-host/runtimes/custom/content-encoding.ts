/**
 * A custom app's buffered answer decoded of its `Content-Encoding`. An async run asks the app
 * for `identity` (its answer goes to a webhook inside a JSON body, which no encoding of the
 * app's survives), but a server may compress whatever it is asked: gzip, deflate and br are
 * decoded here, to at most 10 MiB. Any other encoding cannot be, and the run fails saying so.
 */
import { promisify } from "node:util";
import { brotliDecompress, gunzip, inflate, inflateRaw, type ZlibOptions } from "node:zlib";
import { MAX_INVOKE_BODY_BYTES } from "../../limits.ts";

type Decoder = (bytes: Buffer, options: ZlibOptions) => Promise<Buffer>;

const inflateAny: Decoder = async (bytes, options) => {
  try {
    return await promisify(inflate)(bytes, options);
  } catch (err) {
    // HTTP's deflate is zlib-wrapped, but some servers send it raw.
    if ((err as NodeJS.ErrnoException).code !== "Z_DATA_ERROR") throw err;
    return promisify(inflateRaw)(bytes, options);
  }
};

const DECODERS: Record<string, Decoder> = {
  gzip: promisify(gunzip),
  "x-gzip": promisify(gunzip),
  deflate: inflateAny,
  br: promisify(brotliDecompress),
};

/** The body, decoded; or why it cannot be (a message safe to show the run's caller). */
export async function decodeBody(
  bytes: Buffer,
  contentEncoding: string | undefined,
): Promise<Buffer | { error: string }> {
  // An empty body has nothing to undo (a HEAD's, a 204's, of a server that always says gzip).
  if (bytes.length === 0) return bytes;
  // Encodings are listed in the order they were applied: undone from the last.
  const codings = (contentEncoding ?? "")
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity")
    .reverse();
  let body = bytes;
  for (const coding of codings) {
    const decode = DECODERS[coding];
    if (!decode)
      return {
        error: `the app's answer has content-encoding '${coding}', which Runlet cannot decode (it asks for identity and decodes gzip, deflate and br)`,
      };
    try {
      body = await decode(body, { maxOutputLength: MAX_INVOKE_BODY_BYTES });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE")
        return { error: "the app's answer is larger than 10 MiB (decoded)" };
      return { error: `the app's answer is not valid ${coding}: ${(err as Error).message}` };
    }
  }
  return body;
}
