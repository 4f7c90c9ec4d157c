/**
 * The word of a closed list a user most likely meant by another one: a run status, a webhook
 * state, a field of runlet.toml. Said beside the list in a refusal ("did you mean 'failure'?").
 */

/** Insertions, deletions and substitutions that turn `a` into `b` (Levenshtein). */
export function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(
        (row[j] ?? 0) + 1,
        (next[j - 1] ?? 0) + 1,
        (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    row = next;
  }
  return row[b.length] ?? 0;
}

/**
 * The choice `word` most likely meant: the word in `aliases` (another platform's name for it,
 * `failed` for `failure`), else the nearest choice, if at most half its length away (a typo, a
 * letter case); undefined for a word near none.
 */
export function closest(
  word: string,
  choices: readonly string[],
  aliases: Readonly<Record<string, string>> = {},
): string | undefined {
  const lower = word.trim().toLowerCase();
  const alias = aliases[lower.replace(/[\s-]+/g, "_")];
  if (alias !== undefined) return alias;
  const near = choices
    .map((choice) => ({ choice, d: editDistance(choice, lower) }))
    .sort((a, b) => a.d - b.d)[0];
  return near && near.d <= Math.floor(near.choice.length / 2) ? near.choice : undefined;
}

/** ` (did you mean 'x'?)` for the choice `got` most likely meant, else nothing. */
export function didYouMean(
  got: unknown,
  choices: readonly string[],
  aliases?: Readonly<Record<string, string>>,
): string {
  const meant = typeof got === "string" ? closest(got, choices, aliases) : undefined;
  return meant === undefined ? "" : ` (did you mean '${meant}'?)`;
}

/**
 * A refusal of a word outside a closed list, as a zod `error`: `must be one of …`, and the one
 * meant when it is plain (`failed`: "did you mean 'failure'?"; `secret.read`: 'secrets.read').
 */
export const mustBeOneOf =
  (values: readonly string[], aliases?: Readonly<Record<string, string>>) =>
  (issue: { input?: unknown }) =>
    `must be one of ${values.join(", ")}${didYouMean(issue.input, values, aliases)}`;
