import { ENV } from "../../common/consts.ts";
import { tokenState } from "../../common/token-state.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { callProject, loadConfig, printTable } from "../config.ts";
import { confirmOrStop, YES_OPTION } from "../confirm.ts";
import { withCheck } from "../cut-off.ts";
import { expiryOf } from "../expiry.ts";

const USAGE = `Usage: runlet tokens create --name NAME --expires WHEN [--role caller|member|owner] [--json]
       runlet tokens list [--json]
       runlet tokens revoke <service-account-id> [--yes] [--json]

Service-account tokens for scripts and CI (project owners only): the API's service accounts
(/v2/projects/{id}/service-accounts), the dashboard's "API keys" page.

  create   --name      a name for the account, e.g. "ci-staging"
           --expires   a duration from now (12h, 30d, 365d), an RFC 3339 time
                       (2027-01-31T00:00:00Z) or a date (2027-01-31: the end of that day,
                       UTC); at most 3650 days ahead
           --role      caller (may call the project's apps and read their runs through the
                       run API, nothing more: the token to give a caller), member (default:
                       may also deploy, and so read the secrets through the code it
                       deploys) or owner (may also manage tokens, secrets and read the
                       audit log)
           The token is printed once: store it in a secret manager, never in source control.
  list     the project's service accounts, whether each is active, expired, revoked or
           refused since its signing key was retired (key retired), and who made it (by name)
  revoke   stops the account's token: at once on the management API, within 10 s on the
           run API (which keeps what the control plane said of a token for 10 s); for good.
           On a terminal it asks first, naming the account (default No): --yes (-y) answers
           yes. A script (stdin or stdout not a terminal) is not asked`;

interface Account {
  id: string;
  name: string;
  role: string;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
  /** Its token's signing key was retired: the token is refused, though not revoked. */
  keyRetiredAt?: string | null;
  /** The user who made it: a person leaving leaves theirs (docs/deploy.md). */
  createdBy: string;
  /** Their name (a control plane before 2026-11-27 does not say it). */
  createdByName?: string | null;
}

export const tokens: Command = {
  name: "tokens",
  summary: "create, list and revoke service-account tokens",
  usage: USAGE,
  options: {
    name: { type: "string" },
    expires: { type: "string" },
    role: { type: "string" },
    ...YES_OPTION,
  },
  async run({ values, positionals }) {
    const [action, ...rest] = positionals;
    if (action !== "create" && action !== "list" && action !== "revoke") {
      throw new CliError(`say create, list or revoke\n\n${USAGE}`);
    }
    const takes = {
      create: { options: ["name", "expires", "role"] },
      list: {},
      revoke: { options: ["yes"], words: 1 },
    }[action];
    takesOnly(`tokens ${action}`, { values, words: rest }, takes, USAGE);
    if (action === "create") {
      if (!values.name) throw new CliError(`--name is required\n\n${USAGE}`);
      if (!values.expires) throw new CliError(`--expires is required\n\n${USAGE}`);
      const expiresAt = expiryOf(String(values.expires));
      const config = await loadConfig();
      const created = await callProject<Account & { token: string }>(
        config,
        "POST",
        "/service-accounts",
        "creating the token",
        {
          name: values.name,
          expiresAt,
          ...(values.role ? { role: values.role } : {}),
        },
      ).catch((err: unknown) => {
        // Made, its token would have been shown to no one, and its name taken (a 409 again).
        throw withCheck(
          err,
          `runlet tokens list shows whether '${values.name}' was made; if it was, its token reached no one: revoke it (runlet tokens revoke <its id>) and create it again`,
        );
      });
      if (values.json) {
        console.log(JSON.stringify(created));
        return 0;
      }
      console.error(
        `Created service account ${created.name} (${created.id}, ${created.role}), expires ${created.expiresAt}.`,
      );
      console.error("This token is shown only this once. Store it securely; never commit it:");
      console.log(created.token);
      // What the job needs beside the token: the two addresses (the token names its project).
      console.error(
        `A job uses it with ${ENV.baseUrl}=${config.baseUrl} ${ENV.apiUrl}=${config.apiUrl} and ${ENV.token} set to it (from its secret store); it names its project, ${config.projectId}.`,
      );
      return 0;
    }
    const config = await loadConfig();
    if (action === "list") {
      const { serviceAccounts } = await callProject<{ serviceAccounts: Account[] }>(
        config,
        "GET",
        "/service-accounts",
        "listing tokens",
      );
      if (values.json) {
        console.log(JSON.stringify({ serviceAccounts }));
      } else {
        printTable(
          ["ID", "NAME", "ROLE", "EXPIRES", "STATUS", "CREATED BY"],
          serviceAccounts.map((a) => [
            a.id,
            a.name,
            a.role,
            a.expiresAt,
            tokenState(a),
            a.createdByName ?? a.createdBy,
          ]),
          "No service accounts yet: npx runlet tokens create --name ci --expires 30d",
        );
      }
      return 0;
    }
    const [id] = rest;
    if (!id) throw new CliError(`give the id of the account to revoke\n\n${USAGE}`);
    await confirmOrStop(
      async () => {
        const { serviceAccounts } = await callProject<{ serviceAccounts: Account[] }>(
          config,
          "GET",
          "/service-accounts",
          "reading the service accounts",
        );
        const account = serviceAccounts.find((a) => a.id === id);
        // Said before the question: an id mistyped was asked of, and refused only after a yes.
        if (!account)
          throw new CliError(
            `service account '${id}' not found in this project (runlet tokens list shows its accounts)`,
          );
        return `Revoke service account ${account.name} (${id}, ${account.role})? Its token stops working, for good: scripts and CI jobs that use it are refused.`;
      },
      `Kept ${id}: nothing was revoked`,
      values.yes,
    );
    await callProject(config, "DELETE", `/service-accounts/${encodeURIComponent(id)}`, "revoking");
    // The run API keeps a token's check for 10 s (docs/api.md): "no longer works" was not so.
    if (values.json) console.log(JSON.stringify({ id, revoked: true }));
    else
      console.log(
        `Revoked ${id}: its token is refused at once on the management API, within 10 s on the run API.`,
      );
    return 0;
  },
};
