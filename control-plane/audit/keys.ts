/**
 * The integer keys the audit table indexes instead of project and actor ids. Eight-byte integers
 * instead of 30-character strings keep the four indexes small, which is most of what an insert
 * costs. A key is a hash, so two ids may share one: every query also compares the id itself,
 * the key only narrows the index range.
 */

/** The largest prime below 2^48: `key * 31 + codePoint` stays an exact integer in a double. */
const MODULUS = 281_474_976_710_597;

/**
 * A polynomial hash of the string's code points, base 31, modulo a 48-bit prime. Migration 0003
 * computes the same value in SQL (`unicode(substr(s, i, 1))`) for entries written before it.
 */
export function subjectKey(id: string): number {
  let key = 0;
  for (const ch of id) key = (key * 31 + (ch.codePointAt(0) as number)) % MODULUS;
  return key;
}
