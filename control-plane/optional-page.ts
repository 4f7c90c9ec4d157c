/**
 * The lists that answer every row by default and a page when asked (apps, an app's versions,
 * service accounts, a project's users, secrets): without `limit` and `nextToken` the whole list
 * with `hasMore: false`, as they answered before they had pages (no client breaks); with either,
 * `limit` rows (1–200, default 50) after the token's position, and `nextPageToken` while there is
 * more. Tokens are page-token.ts's: a forged one, or one of another list, is 400 `{message}`.
 */
import { z } from "@hono/zod-openapi";
import { DEFAULT_PAGE_SIZE, pageSizeParam } from "./openapi.ts";
import {
  nextPageFields,
  type PageFilters,
  type PagePosition,
  readPageToken,
} from "./page-token.ts";

/** The query of such a list; `items` names its rows in the OpenAPI document. */
export const optionalPageQuery = (items: string) =>
  z.strictObject({
    limit: pageSizeParam.openapi({
      type: "string",
      description: `1 to 200: a page of ${items}. Without it and \`nextToken\`, every one.`,
    }),
    nextToken: z.string().min(1).max(1024).optional(),
  });

/** The paging fields of such a list's answer, beside its rows. */
export const pageFields = { hasMore: z.boolean(), nextPageToken: z.string().optional() };

export interface PageRequest<Row> {
  /** The key page tokens are signed with (`deps.derived.pageTokens`). */
  key: CryptoKey;
  query: { limit?: number; nextToken?: string };
  /** What the rows are selected by: a token serves only the same list and filters. */
  filters: PageFilters;
  /** At most `limit` rows (-1: all) in the list's order, after `after` when given. */
  fetch: (after: PagePosition | undefined, limit: number) => Promise<Row[]>;
  /** A row's position in the list's order, as `fetch` takes it back. */
  position: (row: Row) => PagePosition;
}

/** The rows of the page asked for, and the paging fields of the answer. */
export async function optionalPage<Row>(req: PageRequest<Row>) {
  const { limit, nextToken } = req.query;
  const after = nextToken ? await readPageToken(req.key, nextToken, req.filters) : undefined;
  const paged = limit !== undefined || after !== undefined;
  const size = limit ?? DEFAULT_PAGE_SIZE;
  const fetched = await req.fetch(after, paged ? size + 1 : -1);
  const hasMore = paged && fetched.length > size;
  const rows = hasMore ? fetched.slice(0, size) : fetched;
  const last = rows.at(-1);
  const paging = await nextPageFields(req.key, hasMore, last && req.position(last), req.filters);
  return { rows, hasMore, ...paging };
}
