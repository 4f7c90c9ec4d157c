/**
 * Forms that make a secret shown once (a service account's token, a join token), sent again: a
 * reload of the page that showed the token, or a double click. Each such form carries when it
 * was shown (`since`); a form whose maker finds a thing of the same name that the same user made
 * since then makes no second one and says so. Two copies of one form sent at once are answered
 * one after the other, so the second finds what the first made.
 */
import { Notice, Time } from "./ui.tsx";

/** What a form's maker lists: a thing with a name, who made it and when. */
export interface Made {
  id: string;
  name: string;
  createdBy: string;
  createdAt: string;
}

/** The flash of a form sent again: what it had made already. */
export interface SentAgain {
  kind: "sent-again";
  name: string;
  id: string;
  createdAt: string;
}

/** The form's hidden field: when it was shown. */
export const SinceField = () => <input type="hidden" name="since" value={String(Date.now())} />;

/** Of `listed`, the one this very form made already: named `name`, by `me`, since it was shown. */
export function madeSince<T extends Made>(
  listed: T[],
  form: { name: string; since: unknown; me: string },
): T | undefined {
  const since = Number(form.since);
  if (!Number.isFinite(since) || since <= 0) return undefined;
  return listed.find(
    (t) =>
      t.name === form.name.trim() && t.createdBy === form.me && Date.parse(t.createdAt) > since,
  );
}

/** The forms being answered now: by who sent them, what they named and when they were shown. */
const answering = new Map<string, Promise<unknown>>();

/** Answers a form after any copy of it being answered now (the same `key`). */
export async function oneAtATime<T>(key: unknown[], answer: () => Promise<T>): Promise<T> {
  const id = JSON.stringify(key);
  const first = answering.get(id);
  if (first) await first.catch(() => {});
  const mine = answer();
  if (!first) answering.set(id, mine);
  try {
    return await mine;
  } finally {
    if (answering.get(id) === mine) answering.delete(id);
  }
}

/** What the list says to a form sent again; `what`: "token", "service account". */
export function SentAgainNotice({ flash, what }: { flash: SentAgain; what: string }) {
  return (
    <Notice kind="warn">
      No second {what} was made: you made <strong>{flash.name}</strong> (<code>{flash.id}</code>) at{" "}
      <Time at={flash.createdAt} />, since this form was shown (sent again, as a reload of the page
      that showed its token does). A token is never shown twice: if it was not kept, revoke it and
      make another.
    </Notice>
  );
}
