import type { IncomingMessage } from "node:http";
import { HttpError } from "./errors.ts";

function tooLarge(limit: number): HttpError {
  return new HttpError(413, `the request body is larger than ${limit / 1024 / 1024} MiB`);
}

/** Reads the whole request body, refusing it with 413 as soon as it passes `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/** The body as JSON: an empty body is `null`. */
export function parseJsonBody(body: Buffer): unknown {
  const text = body.toString("utf8");
  if (text.trim() === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, "request body is not valid JSON");
  }
}
