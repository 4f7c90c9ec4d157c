/**
 * A new service account's token, shown on the answer to the form that made it, with what a job
 * needs beside it: the two addresses (`runlet tokens create` prints the same). Until 2026-11-27
 * the page gave the token alone, and the addresses had to be found elsewhere.
 */
import { ENV } from "../../../common/consts.ts";
import type { DashCtx } from "../api.ts";
import { SecretOnce } from "../ui.tsx";

export function TokenOnce({ c, name, token }: { c: DashCtx; name: string; token: string }) {
  const lines = [
    `${ENV.baseUrl}=${new URL(c.req.url).origin}`,
    ...(c.var.deps.apiUrl ? [`${ENV.apiUrl}=${c.var.deps.apiUrl}`] : []),
  ];
  const use = (
    <p>
      A job uses it with <code>{lines.join(" ")}</code> and <code>{ENV.token}</code> set to it (from
      its secret store); it names its project, <code>{c.var.session.projectId}</code>.
    </p>
  );
  return (
    <SecretOnce title={`Token of ${name}`} secret={token} after={use}>
      <p>
        <strong>Copy it now: it is shown this once.</strong> Store it in a secret manager; Runlet
        keeps only its id and can show it again to nobody.
      </p>
    </SecretOnce>
  );
}
