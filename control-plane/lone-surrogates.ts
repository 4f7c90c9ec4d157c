/**
 * JSON may escape half of a UTF-16 pair alone (`"\ud800"`), which no UTF-8 text can hold: the
 * database stored such a string as U+FFFD, so a secret or a name was accepted and then read back
 * changed. The management API refuses one instead, naming the field (docs/api.md, "Errors").
 */

/** In a `u` regex a pair is one code point: only a half on its own matches. */
const LONE = /\p{Surrogate}/u;

/** The path (`a.b.0`) of the first string or key holding a lone surrogate, or undefined. */
export function loneSurrogateAt(value: unknown, path: string[] = []): string | undefined {
  const here = () => (path.length ? path.join(".") : "body");
  if (typeof value === "string") return LONE.test(value) ? here() : undefined;
  if (value === null || typeof value !== "object") return undefined;
  for (const [key, item] of Object.entries(value)) {
    if (LONE.test(key)) return here();
    const found = loneSurrogateAt(item, [...path, key]);
    if (found !== undefined) return found;
  }
  return undefined;
}
