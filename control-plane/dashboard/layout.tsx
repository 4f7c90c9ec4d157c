/** The frame of every page: header, sections, project switch, sign-out; and bare pages. */
import type { Child } from "hono/jsx";
import { SECTIONS } from "../../common/dashboard-sections.ts";
import type { Session } from "./session.ts";

/** The sections `session` is offered. */
const offered = (session: Session) =>
  SECTIONS.filter(
    (s) =>
      (session.operator || !("operators" in s)) && (session.role === "owner" || !("owners" in s)),
  );

function Document({ title, children }: { title: string; children: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <link rel="icon" href="data:," />
        <title>{`${title} · Runlet`}</title>
        <link rel="stylesheet" href="/dashboard/assets/dashboard.css" />
        <script src="/dashboard/assets/dashboard.js" defer />
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        {children}
      </body>
    </html>
  );
}

/** A page of the signed-in dashboard. `section` marks the current one in the navigation. */
export function Page({
  title,
  section,
  session,
  children,
}: {
  title: string;
  section: string;
  session: Session;
  children: Child;
}) {
  const { principal } = session;
  return (
    <Document title={title}>
      <header class="top">
        <a class="brand" href="/dashboard/runs">
          Runlet
        </a>
        <nav aria-label="Sections">
          {offered(session).map((s) => (
            <a href={s.path} aria-current={s.path === section ? "page" : undefined}>
              {s.label}
            </a>
          ))}
        </nav>
        <div class="account">
          <form method="post" action="/dashboard/project" class="inline">
            <label for="project-switch">Project</label>
            <select id="project-switch" name="project">
              {session.projects.map((p) => (
                <option value={p.id} selected={p.id === session.projectId}>
                  {p.name} ({p.id})
                </option>
              ))}
            </select>
            <button type="submit" class="secondary">
              Open
            </button>
          </form>
          <span class="who" title={principal.id}>
            {principal.name}
            {principal.type === "service_account" ? " (service account)" : ""}
          </span>
          <form method="post" action="/dashboard/sign-out" class="inline">
            <button type="submit" class="secondary">
              Sign out
            </button>
          </form>
        </div>
      </header>
      <main id="main">
        <h1>{title}</h1>
        {children}
      </main>
    </Document>
  );
}

/** A page outside a session: sign-in, a used link, an error before sign-in. */
export function BarePage({ title, children }: { title: string; children: Child }) {
  return (
    <Document title={title}>
      <main id="main" class="narrow">
        <p class="brand">Runlet</p>
        <h1>{title}</h1>
        {children}
      </main>
    </Document>
  );
}
