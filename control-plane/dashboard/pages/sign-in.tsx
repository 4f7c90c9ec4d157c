/**
 * Signing in and out: the one-time link (`/dashboard/sign-in?code=…`, exchanged for the
 * session cookie and redirected so the code leaves the address bar), a pasted token
 * (`/dashboard/login`), sign-out, and the choice of project.
 */
import type { Hono } from "hono";
import { ApiError } from "../../errors.ts";
import type { DashCtx, DashEnv } from "../api.ts";
import { BarePage } from "../layout.tsx";
import {
  clearSessionCookies,
  endSession,
  readSession,
  setProjectCookie,
  setSessionCookies,
  signInWithToken,
  useSignInLink,
} from "../session.ts";
import { Field, Notice } from "../ui.tsx";

const FIRST_PAGE = "/dashboard/runs";

/**
 * Where to go after signing in: only a dashboard path of this site, as a browser resolves it
 * (`/dashboard/../x` is `/x`: not one).
 */
function nextPath(raw: unknown): string {
  if (typeof raw !== "string" || !raw.startsWith("/") || raw.startsWith("//")) return FIRST_PAGE;
  const url = new URL(raw, "http://dashboard.invalid");
  return url.origin === "http://dashboard.invalid" && /^\/dashboard(\/|$)/.test(url.pathname)
    ? url.pathname + url.search
    : FIRST_PAGE;
}

/**
 * The command that prints a link back to `next`, for the page to show: only a path of plain
 * characters is put in it (the address is anyone's to write, and the reader may paste it).
 */
function linkCommand(next: string): string | undefined {
  if (next === FIRST_PAGE) return "npx runlet dashboard";
  return /^[A-Za-z0-9/_.?=&%-]+$/.test(next) ? `npx runlet dashboard '${next}'` : undefined;
}

function LoginPage({ error, next, ended }: { error?: string; next: string; ended?: string }) {
  const command = linkCommand(next);
  return (
    <BarePage title="Sign in">
      {error ? <Notice kind="error">{error}</Notice> : null}
      {ended === "out" ? (
        // Said, so a reader at a shared machine knows the sign-out was done, not that the
        // session ended by itself (the page was the bare sign-in page, as for a first visit).
        <Notice kind="info">
          You signed out: this browser's session is ended, and its cookie opens no page again.
        </Notice>
      ) : ended === "project" ? (
        <Notice kind="warn">
          Your session ended: you are no longer a member of any project (an owner removed you). Ask
          an owner to add you again (<code>runlet users add</code>), then sign in.
        </Notice>
      ) : ended ? (
        <Notice kind="warn">
          Your session ended (it expired, you signed out elsewhere, or its key was revoked): sign in
          again to go on where you were. A form you had not sent was not saved.
        </Notice>
      ) : null}
      <p>
        On the machine that runs Runlet, <code>{command ?? "npx runlet dashboard"}</code> prints a
        one-time sign-in link{command && next !== FIRST_PAGE ? " to this page" : ""}. Or paste a
        token: yours, or a service account's.
      </p>
      <form method="post" action="/dashboard/login" class="stack">
        <input type="hidden" name="next" value={next} />
        <Field
          label="Token"
          name="token"
          type="password"
          required
          autocomplete="off"
          hint="It is exchanged for a session and not kept in the browser."
        />
        <button type="submit">Sign in</button>
      </form>
    </BarePage>
  );
}

export function registerSignIn(dash: Hono<DashEnv>) {
  dash.get("/sign-in", async (c) => {
    const code = c.req.query("code") ?? "";
    const { db, keys } = c.var.deps;
    const session = code ? await useSignInLink(db, keys, code) : null;
    if (!session) {
      return c.html(
        <BarePage title="This sign-in link does not work">
          <p>
            A sign-in link works once, for 5 minutes. Run <code>npx runlet dashboard</code> for a
            new one, or <a href="/dashboard/login">sign in with a token</a>.
          </p>
        </BarePage>,
        400,
      );
    }
    setSessionCookies(c, session);
    return c.redirect(nextPath(c.req.query("next")), 303);
  });

  dash.get("/login", (c) =>
    c.html(<LoginPage next={nextPath(c.req.query("next"))} ended={c.req.query("ended")} />),
  );

  dash.post("/login", async (c) => {
    const form = await c.req.parseBody();
    const next = nextPath(form.next);
    const token = typeof form.token === "string" ? form.token : "";
    const { db, keys, publicKeys } = c.var.deps;
    try {
      const session = await signInWithToken(db, keys, publicKeys, token);
      setSessionCookies(c, session);
      return c.redirect(next, 303);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return c.html(
        <LoginPage error={`That token does not work: ${err.message}.`} next={next} />,
        401,
      );
    }
  });

  dash.post("/sign-out", async (c) => {
    const session = await readSession(c, c.var.deps.db, c.var.deps.publicKeys);
    if (session) await endSession(c.var.deps.db, session);
    clearSessionCookies(c);
    return c.redirect("/dashboard/login?ended=out", 303);
  });

  dash.post("/project", async (c) => switchProject(c));
}

async function switchProject(c: DashCtx) {
  const session = await readSession(c, c.var.deps.db, c.var.deps.publicKeys);
  if (!session) return c.redirect("/dashboard/login", 303);
  const form = await c.req.parseBody();
  const wanted = session.projects.find((p) => p.id === form.project);
  if (wanted) setProjectCookie(c, wanted.id);
  return c.redirect(FIRST_PAGE, 303);
}
