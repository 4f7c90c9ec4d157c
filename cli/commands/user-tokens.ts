/**
 * `runlet users token` and `runlet users revoke`: a user's token renewed by its holder
 * (`POST /v2/me/token`), issued anew or revoked by an operator who owns the project
 * (`POST|DELETE /v2/projects/{id}/users/{user}/token`). The old token stops working at once.
 */
import { ENV } from "../../common/consts.ts";
import { tokenSubject } from "../../common/jwt.ts";
import { homePaths, readLocalJson, writePrivateFile } from "../../control-plane/home.ts";
import { CliError } from "../command.ts";
import { type CliConfig, callApi, callProject, cliHome, loadConfig } from "../config.ts";
import { CutOff, cutHead } from "../cut-off.ts";
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

/**
 * A renewal whose answer was cut: whether it was made, told by the token it was sent with. Made,
 * it revoked that token, and the new one reached no one: the general advice ("check what it did")
 * could not be followed, every check being refused as revoked.
 */
async function renewalCut(cut: CutOff, config: CliConfig): Promise<CliError> {
  // Asked again while nothing answers (a control plane killed mid-renewal is back within
  // seconds), 5 s at most.
  let works: boolean | undefined;
  for (let tries = 0; works === undefined && tries < 10; tries++) {
    if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 500));
    works = await callApi(config, "GET", "/v2/projects", "checking your token").then(
      () => true,
      (err: unknown) => {
        const status = err instanceof CliError ? err.answer?.status : undefined;
        if (status === undefined || status >= 500) return undefined;
        return status !== 401;
      },
    );
  }
  const head = cutHead(cut.what, cut.url);
  const anew = `an operator who owns one of your projects gives you a new one (runlet users token ${tokenSubject(config.token) ?? "<your id>"} --expires 90d)`;
  if (works)
    return new CliError(`${head} It was not renewed: your token still works; run it again.`);
  if (works === undefined)
    return new CliError(
      `${head} It may have been renewed, and Runlet does not answer to tell: once it does, runlet projects says whether your token still works (then run this again); if it is refused as revoked, the renewal was made and the new token lost with its answer: ${anew}.`,
    );
  const local = process.env[ENV.token] ? undefined : await readLocalJson(cliHome());
  const rewritten = local?.token && local.token !== config.token;
  return new CliError(
    `${head} It was renewed, but the new token was lost with the answer, and your token is refused now. ${
      rewritten
        ? "The control plane, restarting, wrote another to local.json: you are signed in again."
        : `To sign in again, ${anew}; on runlet start's own home, starting it again writes one to local.json.`
    }`,
  );
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
    : await callApi<Issued>(config, "POST", "/v2/me/token", "renewing your token", {
        expiresAt,
      }).catch(async (err: unknown) => {
        throw err instanceof CutOff ? await renewalCut(err, config) : err;
      });
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
