/**
 * A request that waits for its answer as long as the server takes: Node's fetch (undici) gives
 * up on an answer whose head has not come within 300 s ("fetch failed", which the CLI read as
 * "cannot reach"), and a deploy's answer comes once its replica started, which an app's
 * `start_timeout` allows to take up to 30 minutes. The answer is read whole, as a `Response`.
 */
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";

/** Statuses whose answer has no body: a `Response` refuses one. */
const NO_BODY = new Set([101, 204, 205, 304]);

/** As `fetch(url, init)`, for a body of text (or none). */
export function patientFetch(url: string, init: RequestInit = {}): Promise<Response> {
  if (init.body != null && typeof init.body !== "string")
    throw new Error("patientFetch sends a body of text only");
  const target = new URL(url);
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  const options = {
    method: init.method ?? "GET",
    headers: Object.fromEntries(new Headers(init.headers)),
  };
  return new Promise<Response>((resolve, reject) => {
    const req = send(target, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => {
        const status = res.statusCode ?? 502;
        const body = NO_BODY.has(status) ? null : Buffer.concat(chunks);
        resolve(
          new Response(body, { status, statusText: res.statusMessage, headers: of(res.headers) }),
        );
      });
    });
    req.on("error", reject);
    req.end(init.body ?? undefined);
  });
}

function of(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value ?? ""]) out.append(name, one);
  }
  return out;
}
