/** `--all` for the CLI's paginated lists: every page, following `nextPageToken`, with progress. */
import { type CliConfig, callProject } from "./config.ts";

/** At most this many pages for `--all`: a bound on the loop, far beyond any real log. */
const MAX_PAGES = 10_000;

/**
 * Fetches one page of a paginated list, or every page with `all` (following `nextPageToken`,
 * with progress on stderr). Returns the items and the last page's other fields.
 */
export async function fetchPages<T, K extends string>(
  config: CliConfig,
  path: string,
  key: K,
  query: URLSearchParams,
  opts: { all: boolean; what: string },
): Promise<{ items: T[]; last: Record<string, unknown> }> {
  const items: T[] = [];
  let last: Record<string, unknown> = {};
  const tty = process.stderr.isTTY === true;
  for (let page = 1; page <= MAX_PAGES; page++) {
    const suffix = query.size ? `?${query}` : "";
    last = await callProject<Record<string, unknown>>(config, "GET", `${path}${suffix}`, opts.what);
    items.push(...((last[key] as T[] | undefined) ?? []));
    const next = last.nextPageToken;
    if (!opts.all || typeof next !== "string") break;
    // On a terminal, one line counting up; in a CI log, a line of its own every 10 pages.
    if (tty) process.stderr.write(`\r${items.length} so far…`);
    else if (page % 10 === 0) process.stderr.write(`${items.length} so far…\n`);
    query.set("nextToken", next);
  }
  if (opts.all && items.length > 0)
    process.stderr.write(tty ? `\r${items.length} in all.    \n` : `${items.length} in all.\n`);
  return { items, last };
}
