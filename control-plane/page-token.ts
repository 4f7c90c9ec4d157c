/**
 * Page tokens of the keyset-paginated lists (audit log, runs, and optional-page.ts's): opaque to callers, tamper-evident,
 * and bound to the query that issued them. A token is `base64url(payload).base64url(HMAC)`; the
 * payload holds the position (timestamp, id) of the last row served and a digest of the filters.
 */
import { base64urlDecode, base64urlEncode } from "../common/jwt.ts";
import { ApiError } from "./errors.ts";

export interface PagePosition {
  timestamp: number;
  /** The row's tie-break within its timestamp: an id, or the audit log's `seq`. */
  id: string | number;
  /** A sort key before the tie-break, where the list has one (a project's users: the name). */
  name?: string;
}

/**
 * Everything that decides which rows a query selects, except the page position and size: the
 * list's name, the project and each filter as the caller sent it (absent ones undefined).
 */
export type PageFilters = { list: string; projectId: string } & Record<string, string | undefined>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function digest(filters: PageFilters): Promise<string> {
  const canonical = JSON.stringify(
    Object.keys(filters)
      .sort()
      .map((key) => [key, filters[key] ?? null]),
  );
  const hash = await crypto.subtle.digest("SHA-256", encoder.encode(canonical));
  return base64urlEncode(new Uint8Array(hash).slice(0, 12));
}

export async function issuePageToken(
  key: CryptoKey,
  position: PagePosition,
  filters: PageFilters,
): Promise<string> {
  const payload = base64urlEncode(
    encoder.encode(
      JSON.stringify({
        t: position.timestamp,
        i: position.id,
        ...(position.name === undefined ? {} : { n: position.name }),
        f: await digest(filters),
      }),
    ),
  );
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(payload));
  return `${payload}.${base64urlEncode(new Uint8Array(mac))}`;
}

const invalid = () =>
  new ApiError("bad_request", "nextToken is not a page token issued by this service");

/** The position a token continues from; 400 when it is forged, garbled or from another query. */
export async function readPageToken(
  key: CryptoKey,
  token: string,
  filters: PageFilters,
): Promise<PagePosition> {
  const [payload, mac, ...rest] = token.split(".");
  if (!payload || !mac || rest.length > 0) throw invalid();
  let macBytes: Uint8Array;
  try {
    macBytes = base64urlDecode(mac);
  } catch {
    throw invalid(); // not base64url, or a length atob refuses
  }
  // crypto.subtle.verify compares in constant time.
  if (!(await crypto.subtle.verify("HMAC", key, macBytes, encoder.encode(payload)))) {
    throw invalid();
  }
  const body = JSON.parse(decoder.decode(base64urlDecode(payload))) as {
    t: number;
    i: string | number;
    n?: string;
    f: string;
  };
  if (body.f !== (await digest(filters))) {
    throw new ApiError(
      "bad_request",
      "nextToken was issued for other filters: send the same filters as for the first page",
    );
  }
  return { timestamp: body.t, id: body.i, ...(body.n === undefined ? {} : { name: body.n }) };
}

/**
 * The paging fields of a list's answer: `{nextPageToken}` continuing after `last` when there is
 * more, else nothing at all (the specification wants the key absent at the end).
 */
export async function nextPageFields(
  key: CryptoKey,
  hasMore: boolean,
  last: PagePosition | undefined,
  filters: PageFilters,
): Promise<{ nextPageToken?: string }> {
  if (!hasMore || !last) return {};
  return { nextPageToken: await issuePageToken(key, last, filters) };
}
