/**
 * D1 binds at most 100 parameters to a statement (its local form, under wrangler dev and in the
 * tests, takes any number). A query whose `IN` list comes from a request — the projects of a
 * host's apps, of a batch of runs — reads the list in parts of this many, leaving room for the
 * statement's other parameters.
 */
export const IN_LIST_MAX = 90;

/** `read` over `values` in parts of at most IN_LIST_MAX, its rows concatenated. */
export async function inParts<T, R>(
  values: readonly T[],
  read: (part: T[]) => Promise<R[]>,
): Promise<R[]> {
  const rows: R[] = [];
  for (let at = 0; at < values.length; at += IN_LIST_MAX)
    rows.push(...(await read(values.slice(at, at + IN_LIST_MAX))));
  return rows;
}
