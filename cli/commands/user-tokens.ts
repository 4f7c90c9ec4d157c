/**
 * `runlet users token` and `runlet users revoke`: a user's token renewed by its holder
 * (`POST /v2/me/token`), issued anew or revoked by an operator who owns the project
 * (`POST|DELETE /v2/projects/{id}/users/{user}/token`). The old token stops working at once.
 */
import { ENV } from "../../common/consts.ts";
import { homePaths, readLocalJson, writePrivateFile } from "../../control-plane/home.ts";
import { CliError } from "../command.ts";
import { type CliConfig, callApi, callProject, cliHome, loadConfig } from "../config.ts";
import { expiryOf } from "../expiry.ts";

type Values = Record<string, string | boolean | undefined>;

interface Issued {
  id: string;
  name: string;
  expiresAt: string;
  token: string;
  revoked: number;
}

/**
 * Your own token, renewed: saved to local.json when that is where the CLI took it from (the old
 * one is revoked, so the file would otherwise hold a dead token); null when it came from the
 * environment, whose holder must set it again.
 */
async function saveOwn(config: CliConfig, issued: Issued): Promise<string | null> {
  if (process.env[ENV.token]) return null;
  const home = cliHome();
  const local = await readLocalJson(home);
  if (!local || local.token !== config.token) return null;
  const path = homePaths(home).localJson;
  await writePrivateFile(path, `${JSON.stringify({ ...local, token: issued.token }, null, 2)}\n`);
  return path;
}

export async function newToken(
  values: Values,
  userId: string | undefined,
  usage: string,
): Promise<number> {
  if (!values.expires) throw new CliError(`--expires is required\n\n${usage}`);
  const expiresAt = expiryOf(String(values.expires));
  // One's own token is no project's; a member's is renewed in a project of theirs.
  const config = await loadConfig(process.env, { anyProject: !userId });
  const issued = userId
    ? await callProject<Issued>(
        config,
        "POST",
        `/users/${encodeURIComponent(userId)}/token`,
        "issuing the token",
        { expiresAt },
      )
    : await callApi<Issued>(config, "POST", "/v2/me/token", "renewing your token", { expiresAt });
  // The old token is revoked already: a new one that could not be saved is printed instead.
  const savedTo = userId
    ? null
    : await saveOwn(config, issued).catch((err: Error) => {
        console.error(`runlet: the new token could not be saved to local.json: ${err.message}`);
        return null;
      });
  if (values.json) {
    const { token, ...rest } = issued;
    console.log(JSON.stringify(savedTo ? { ...rest, savedTo } : issued));
    return 0;
  }
  const old = issued.revoked === 1 ? "the old one" : `the ${issued.revoked} older ones`;
  const whose = userId ? `${issued.name} (${issued.id})` : "You";
  const stopped = issued.revoked
    ? ` ${old} ${issued.revoked === 1 ? "is" : "are"} refused at once by the management API, within 10 s by the run API`
    : "";
  if (savedTo) {
    console.error(
      `You have a new token, expiring ${issued.expiresAt}, saved to ${savedTo};${stopped || " nothing else changed"}.`,
    );
    return 0;
  }
  console.error(
    `${whose} ${userId ? "has" : "have"} a new token, expiring ${issued.expiresAt}${stopped ? `;${stopped}` : ""}. It is shown only this once:`,
  );
  console.log(issued.token);
  console.error(
    userId
      ? `Hand it over as a password; they set ${ENV.token} to it.`
      : `Set ${ENV.token} to it wherever you used the old one.`,
  );
  return 0;
}

export async function revokeToken(values: Values, userId: string): Promise<number> {
  const config = await loadConfig();
  await callProject(
    config,
    "DELETE",
    `/users/${encodeURIComponent(userId)}/token`,
    "revoking the token",
  );
  if (values.json) {
    console.log(JSON.stringify({ id: userId, revoked: true }));
    return 0;
  }
  console.log(
    `Revoked the token of ${userId}: refused at once by the management API, within 10 s by the run API. A new one: runlet users token ${userId} --expires 90d (for a user in no project, once 'runlet users add ${userId} --role member' has added them)`,
  );
  return 0;
}
