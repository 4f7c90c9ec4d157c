/** The small pieces every page is made of: times, states, tables, fields, notices, paging. */
import type { Child } from "hono/jsx";

/** `2026-11-23 23:11:06 UTC`; the page's script shows it in the reader's own zone. */
export function formatUtc(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/**
 * A time, shown by the page's script in the reader's own zone; `utc` keeps it in UTC (`data-utc`),
 * where the page's fields that take a time take UTC (the audit log's From and To).
 */
export function Time({ at, utc }: { at: string | number | null | undefined; utc?: boolean }) {
  if (at === null || at === undefined) return <span class="muted">—</span>;
  const iso = typeof at === "number" ? new Date(at).toISOString() : at;
  return (
    <time datetime={iso} title={iso} data-utc={utc ? "" : undefined}>
      {formatUtc(iso)}
    </time>
  );
}

export function Duration({ ms }: { ms: number | null | undefined }) {
  if (ms === null || ms === undefined) return <span class="muted">—</span>;
  const text =
    ms < 1000
      ? `${Math.round(ms)} ms`
      : ms < 60_000
        ? `${(ms / 1000).toFixed(1)} s`
        : `${Math.round(ms / 1000)} s`;
  return <span class="num">{text}</span>;
}

/** A run's or an attempt's state as a coloured word (never colour alone). */
export function Status({ value }: { value: string }) {
  return <span class={`status status-${value.replace(/[^a-z]/g, "")}`}>{value}</span>;
}

export function Notice({ kind, children }: { kind: "error" | "info" | "warn"; children: Child }) {
  return (
    <div class={`notice notice-${kind}`} role={kind === "error" ? "alert" : "status"}>
      {children}
    </div>
  );
}

export function Table({
  label,
  head,
  children,
  id,
  refresh,
}: {
  label: string;
  head: string[];
  children: Child;
  id?: string;
  /** Milliseconds between live updates of the table's body (the page's script). */
  refresh?: number;
}) {
  return (
    // A region of its own, focusable: a wide table scrolls, and a keyboard must reach it too.
    <section class="table-wrap" aria-label={label} tabindex={0}>
      <table aria-label={label}>
        <thead>
          <tr>
            {head.map((h) => (
              // A column of buttons has no heading to show: a screen reader still names it.
              <th scope="col">{h === "" ? <span class="sr-only">Actions</span> : h}</th>
            ))}
          </tr>
        </thead>
        <tbody id={id} data-refresh={refresh === undefined ? undefined : String(refresh)}>
          {children}
        </tbody>
      </table>
    </section>
  );
}

/** An empty table's one row. */
export function EmptyRow({ span, children }: { span: number; children: Child }) {
  return (
    <tr>
      <td colspan={span} class="muted">
        {children}
      </td>
    </tr>
  );
}

export function Field({
  label,
  name,
  type = "text",
  value,
  required,
  hint,
  autocomplete = "off",
  options,
  maxlength,
  pattern,
  step,
}: {
  label: string;
  name: string;
  type?: string;
  value?: string;
  required?: boolean;
  hint?: string;
  autocomplete?: string;
  options?: Array<{ value: string; label: string }>;
  /** The API's own bound, so a browser stops there rather than the API refusing it. */
  maxlength?: number;
  /** The API's own rule for the value, checked by the browser before the form is sent. */
  pattern?: string;
  /** A time's precision in seconds (`0.001`: seconds to type, a permalink's milliseconds valid). */
  step?: string;
}) {
  const id = `f-${name}`;
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {options ? (
        <select id={id} name={name} aria-describedby={hintId}>
          {options.map((o) => (
            <option value={o.value} selected={o.value === value}>
              {o.label}
            </option>
          ))}
        </select>
      ) : type === "textarea" || type === "secret" ? (
        // A secret's is masked where the browser can (a PEM key or JSON credentials span lines,
        // which a password field flattened into one, with the save said to succeed).
        <textarea
          id={id}
          name={name}
          required={required}
          aria-describedby={hintId}
          rows={type === "secret" ? 3 : 4}
          class={type === "secret" ? "secret-value" : undefined}
          spellcheck={type === "secret" ? false : undefined}
          autocomplete={autocomplete}
        >
          {value ?? ""}
        </textarea>
      ) : (
        <input
          id={id}
          name={name}
          type={type}
          value={value}
          required={required}
          autocomplete={autocomplete}
          aria-describedby={hintId}
          maxlength={maxlength}
          pattern={pattern}
          title={pattern ? hint : undefined}
          step={step}
        />
      )}
      {hint ? (
        <small id={hintId} class="hint">
          {hint}
        </small>
      ) : null}
    </div>
  );
}

/** The query of a list's page that a pager's cursor (none: the first page) asks the API for. */
export function pageQuery(cursor: string | undefined, rows = 50): string {
  const params = new URLSearchParams({ limit: String(rows) });
  if (cursor) params.set("nextToken", cursor);
  return `?${params}`;
}

/**
 * `path` with the parameters that are set. A list's place (its cursors) rides this way through a
 * confirmation and its form, so the answer goes back to the page the user acted from.
 */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v) params.set(k, v);
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/**
 * "Next page" for a list paged by the API's tokens; the filters stay in the link. `param` names
 * the cursor in the address (a page with two lists gives each its own).
 */
export function Pager({
  path,
  query,
  next,
  first,
  param = "cursor",
  label = "Pages",
}: {
  path: string;
  query: Record<string, string | undefined>;
  next: string | undefined;
  /** This page is not the first: offer the way back to it. */
  first: boolean;
  param?: string;
  label?: string;
}) {
  const link = (extra: Record<string, string>) => withQuery(path, { ...query, ...extra });
  return (
    <nav class="pager" aria-label={label}>
      {first ? <a href={link({ [param]: "" })}>First page</a> : null}
      {next ? (
        <a href={link({ [param]: next })} rel="next">
          Next page
        </a>
      ) : (
        <span class="muted">End of the list</span>
      )}
    </nav>
  );
}

export function Definition({ items }: { items: Array<[string, Child]> }) {
  return (
    <dl class="facts">
      {items.map(([term, value]) => (
        <div>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * Output lines as `runlet logs` prints them (time, stream, text), in one scrollable block: a
 * run's log, and a replica's output. `dropped` heads it when older lines were let go.
 */
export function LogLines({
  lines,
  dropped,
}: {
  lines: Array<{ time: string; stream: string; text: string }>;
  dropped?: string;
}) {
  return (
    <pre class="logs" tabindex={0}>
      {dropped ? `… ${dropped}\n` : ""}
      {lines.map((l) => (
        <>
          <time datetime={l.time} data-ms="">
            {l.time}
          </time>
          {` ${l.stream} ${l.text}\n`}
        </>
      ))}
    </pre>
  );
}

/**
 * A secret shown this once (a new token): `title`, what to do with it (`children`), the secret
 * and its copy button, then `after` (how to use it). `data-shown-once`: a reload of a POST's
 * answer that shows it asks for the page again (assets.ts) rather than sending the form again.
 */
export function SecretOnce({
  title,
  secret,
  children,
  after,
}: {
  title: string;
  secret: string;
  children: Child;
  after?: Child;
}) {
  return (
    <section class="secret-once" aria-labelledby="token-title" data-shown-once="">
      <h2 id="token-title">{title}</h2>
      {children}
      <code id="new-token">{secret}</code>
      <button type="button" data-copy="new-token" aria-label="Copy the token">
        Copy
      </button>
      {after}
    </section>
  );
}

/** An app's page in the dashboard. */
export const appPage = (name: string) => `/dashboard/apps/${encodeURIComponent(name)}`;
