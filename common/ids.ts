const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

/** Prefixes of every id Runlet hands out; the prefix says what an id names. */
export type IdPrefix =
  | "usr"
  | "prj"
  | "tok"
  | "sa"
  | "app"
  | "dep"
  | "run"
  | "log"
  | "req"
  | "hst"
  | "htk";

/**
 * A prefixed id that sorts by creation time: `run_` + 10 chars of milliseconds + 16 random chars
 * (80 bits), all lowercase Crockford base32. Runs anywhere WebCrypto does.
 */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let random = "";
  for (const b of bytes) random += CROCKFORD[b % 32];
  return `${prefix}_${time}${random}`;
}

/** The start of `newId(prefix, time)`'s ids: every id made before `time` sorts before it. */
export function idsFrom(prefix: IdPrefix, time: number): string {
  return newId(prefix, time).slice(0, prefix.length + 11);
}

/** When an id of `newId` was made (ms since the epoch), or undefined if it is not one. */
export function timeOfId(id: string): number | undefined {
  const match = /^[a-z]+_([0-9a-hjkmnp-tv-z]{10})[0-9a-hjkmnp-tv-z]{16}$/.exec(id);
  if (!match?.[1]) return undefined;
  let time = 0;
  for (const char of match[1]) time = time * 32 + CROCKFORD.indexOf(char);
  return time;
}

/** A run id as `newId("run")` makes it, as a pattern's source (for routes) and as a RegExp. */
export const RUN_ID_SOURCE = "run_[0-9a-z]{26}";
export const RUN_ID = new RegExp(`^${RUN_ID_SOURCE}$`);
