/**
 * The webhook part of `/dashboard/runs/{run_id}`: each delivery of the run with its attempts
 * (the latest first; once the webhook was sent again, each headed "Delivery N"), and, for an
 * ended run whose delivery has ended, the Resend form.
 *
 * Resend posts to `/dashboard/runs/{run_id}/resend`, which calls the run API's
 * `POST {api_url}/v4/{project}/{app}/runs/{run_id}/deliveries` with the session's token, then
 * redirects back to the run page (Post/Redirect/Get); what the API answered rides there in a
 * flash cookie. The secret typed in goes to the run API once, as `X-Webhook-Secret`: it is
 * never kept, logged, put in the flash or shown back.
 */
import type { Context, Hono } from "hono";
import { HEADER } from "../../../common/consts.ts";
import type { DeliveryView, RunView, WebhookView } from "../../../common/protocol/run-view.ts";
import { isEnded } from "../../../common/protocol/runs.ts";
import type { DashEnv } from "../api.ts";
import { setFlash, takeFlash } from "../flash.ts";
import { Duration, EmptyRow, Field, Notice, Status, Table, Time } from "../ui.tsx";
import type { RunItem } from "./runs.tsx";

/** What the Resend action (and a refused Cancel) tells the run page. */
export type ResendFlash =
  | { kind: "sent"; delivery: number; target: string }
  | { kind: "refused"; message: string; endpoint?: string }
  | { kind: "not-cancelled"; message: string }
  | { kind: "cancelled" };

/** A run's page on the dashboard. */
export const pageOf = (runId: string) => `/dashboard/runs/${encodeURIComponent(runId)}`;

export function takeResendFlash(c: Context, runId: string): ResendFlash | undefined {
  return takeFlash<ResendFlash>(c, pageOf(runId));
}

export function ResendNotice({ flash }: { flash: ResendFlash }) {
  if (flash.kind === "sent")
    return (
      <Notice kind="info">{`Delivery ${flash.delivery} is on its way to ${flash.target}.`}</Notice>
    );
  // Said, as every other action says what it did: the status alone, far down on a phone, was
  // all there was to read.
  if (flash.kind === "cancelled")
    return (
      <Notice kind="info">
        Cancelled: the run ended as cancelled (a running one's <code>ctx.signal</code> is aborted on
        its host), and no webhook is delivered.
      </Notice>
    );
  const what =
    flash.kind === "refused" ? "The webhook was not sent again" : "The run was not cancelled";
  return <Notice kind="error">{`${what}: ${flash.message}.`}</Notice>;
}

/** A Cancel done or refused: told on the run's page after a redirect, so a reload sends nothing again. */
export function setCancelOutcome(c: Context, runId: string, refusal?: string): void {
  const flash: ResendFlash =
    refusal === undefined ? { kind: "cancelled" } : { kind: "not-cancelled", message: refusal };
  setFlash(c, pageOf(runId), flash);
}

/** Whether a delivery can be sent again: an ended run's, over; never a cancelled run's (none was made). */
export function canResend(run: Pick<RunView, "status" | "webhook">): boolean {
  const state = run.webhook?.state;
  return isEnded(run.status) && state !== undefined && state !== "pending" && state !== "cancelled";
}

type Numbered = DeliveryView & { delivery?: number };

function Attempts({ delivery, label }: { delivery: Numbered; label: string }) {
  return (
    <>
      <p>
        To <code>{delivery.target}</code>, {delivery.signed ? "signed" : "not signed"}:{" "}
        <Status value={delivery.state} />
      </p>
      <Table label={label} head={["Attempt", "Sent", "Answer", "Duration", "Verdict"]}>
        {delivery.attempts.length === 0 ? (
          <EmptyRow span={5}>No attempt yet.</EmptyRow>
        ) : (
          delivery.attempts.map((a) => (
            <tr>
              <td class="num">{a.attempt}</td>
              <td>
                <Time at={a.at} />
              </td>
              {/* An error wraps: on one line, "could not connect to …" pushed Duration and
                  Verdict past the page's right edge. */}
              <td class="wrap">
                {a.status !== undefined ? `HTTP ${a.status}` : (a.error ?? "no answer")}
              </td>
              <td>
                <Duration ms={a.duration_ms} />
              </td>
              <td>
                <Status value={a.verdict} />
              </td>
            </tr>
          ))
        )}
      </Table>
    </>
  );
}

function Delivery({ delivery }: { delivery: Numbered }) {
  const n = delivery.delivery;
  if (n === undefined) return <Attempts delivery={delivery} label="Delivery attempts" />;
  const id = `delivery-${n}`;
  return (
    <section aria-labelledby={id}>
      <h3 id={id}>{`Delivery ${n}`}</h3>
      <Attempts delivery={delivery} label={`Delivery ${n} attempts`} />
    </section>
  );
}

/** Every delivery of the run's webhook, the latest first. */
export function Deliveries({ webhook }: { webhook: WebhookView }) {
  const earlier = [...(webhook.earlier ?? [])].reverse();
  return (
    <>
      <Delivery delivery={webhook} />
      {earlier.map((d) => (
        <Delivery delivery={d} />
      ))}
    </>
  );
}

export function ResendForm({
  runId,
  webhook,
  endpoint,
}: {
  runId: string;
  webhook: WebhookView;
  /** What was typed in a refused attempt. */
  endpoint?: string;
}) {
  const first = webhook.earlier?.[0]?.target ?? webhook.target;
  return (
    <form
      method="post"
      action={`${pageOf(runId)}/resend`}
      class="filters"
      aria-label="Send the webhook again"
    >
      <Field
        label="Endpoint"
        name="endpoint"
        type="url"
        value={endpoint}
        hint={`Empty: the first target, ${first}`}
      />
      <Field
        label="Secret"
        name="secret"
        type="password"
        hint="Runlet does not keep the secret: type it to sign this delivery, or leave it empty for an unsigned one"
      />
      <button type="submit">Resend</button>
    </form>
  );
}

/** A refused endpoint goes back into the field, unless it is long or carries credentials. */
function echoable(endpoint: string): string | undefined {
  if (endpoint === "" || endpoint.length > 1000) return undefined;
  return /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(endpoint) ? undefined : endpoint;
}

export function registerResend(dash: Hono<DashEnv>) {
  dash.post("/runs/:runId/resend", async (c) => {
    const runId = c.req.param("runId");
    const { api, session } = c.var;
    const form = await c.req.parseBody();
    const endpoint = typeof form.endpoint === "string" ? form.endpoint.trim() : "";
    const secret = typeof form.secret === "string" ? form.secret : "";
    const indexed = await api.project<RunItem>("GET", `/runs/${encodeURIComponent(runId)}`);
    const sent = indexed.ok
      ? await api.runs<RunView>(
          "POST",
          `/v4/${session.projectId}/${indexed.data.app}/runs/${indexed.data.id}/deliveries${
            endpoint ? `?webhookEndpoint=${encodeURIComponent(endpoint)}` : ""
          }`,
          secret ? { [HEADER.webhookSecret]: secret } : undefined,
        )
      : indexed;
    const flash: ResendFlash = sent.ok
      ? {
          kind: "sent",
          delivery: sent.data.webhook?.delivery ?? 1,
          target: sent.data.webhook?.target ?? "",
        }
      : { kind: "refused", message: sent.message, endpoint: echoable(endpoint) };
    setFlash(c, pageOf(runId), flash);
    return c.redirect(pageOf(runId), 303);
  });
}
