import { mkdir, stat } from "node:fs/promises";
import { isIP } from "node:net";
import { ENV } from "../../common/consts.ts";
import { parseHttpUrl } from "../../common/http-url.ts";
import { homePaths, runletHome, writePrivateFile } from "../../control-plane/home.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { readAnswer, request } from "../config.ts";
import { expiryOf } from "../expiry.ts";

const USAGE = `Usage: runlet init --control-plane URL --name NAME [--project NAME] [--plan PLAN]
                   [--api-url URL] [--expires WHEN] [--json]
       (with RUNLET_BOOTSTRAP_TOKEN set to the control plane's bootstrap token)

Makes the first user of a control plane that has none: one on Workers, or one on Node started
with RUNLET_BOOTSTRAP_TOKEN. That user is an operator and owns a first project. It works once:
then an operator adds users ('runlet users create'). See docs/deploy.md, "The first user".

The bootstrap token is read from RUNLET_BOOTSTRAP_TOKEN only, never from the command line.
The credentials go to RUNLET_HOME/local.json (default ./.runlet/local.json, mode 0600), where
the other commands read them; an existing local.json is never replaced.

  --control-plane  the control plane's URL ({base_url}): https://, or http:// on this machine
  --name           the first user's name
  --project        the first project's name (default: default)
  --plan           hobby (default), pro or enterprise
  --api-url        the run API's address (default: the one the control plane was given)
  --expires        when the user's token expires: a duration like 365d, an RFC 3339 time, or
                   a date 2027-01-31 for the end of that day UTC; at most 3650 days ahead
                   (default 365d)`;

interface Claimed {
  user: { id: string; name: string; operator: true };
  project: { id: string; name: string; plan: string };
  token: string;
  expiresAt: string;
  apiUrl: string | null;
}

/** The control plane's URL, without a trailing slash; plain HTTP only on this machine. */
export function controlPlaneUrl(given: unknown): string {
  const url = typeof given === "string" ? parseHttpUrl(given) : undefined;
  if (!url || url.search || url.hash) {
    throw new CliError(`--control-plane must be the control plane's http(s) URL\n\n${USAGE}`);
  }
  if (url.username || url.password) {
    throw new CliError("--control-plane must not hold a user name or password");
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const local = host === "localhost" || host === "::1" || (isIP(host) === 4 && /^127\./.test(host));
  if (url.protocol === "http:" && !local) {
    throw new CliError(
      `--control-plane ${url.origin} is plain HTTP: the bootstrap token and the new user's token would cross the network readable. Use its https:// address`,
    );
  }
  return url.href.replace(/\/+$/, "");
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}

export const init: Command = {
  name: "init",
  summary: "make the first user (an operator) of a new control plane, and save its credentials",
  usage: USAGE,
  options: {
    "control-plane": { type: "string" },
    name: { type: "string" },
    project: { type: "string" },
    plan: { type: "string" },
    "api-url": { type: "string" },
    expires: { type: "string" },
  },
  async run({ values, positionals }) {
    // It takes no words: a stray one (a value without its option) was ignored.
    takesOnly("init", { values: {}, words: positionals }, {}, USAGE);
    const baseUrl = controlPlaneUrl(values["control-plane"]);
    if (!values.name) throw new CliError(`--name is required\n\n${USAGE}`);
    const apiUrlGiven = values["api-url"];
    if (apiUrlGiven !== undefined && !URL.canParse(String(apiUrlGiven))) {
      throw new CliError(`--api-url must be the run API's URL\n\n${USAGE}`);
    }
    const bootstrapToken = process.env[ENV.bootstrapToken];
    if (!bootstrapToken) {
      throw new CliError(
        `set ${ENV.bootstrapToken} to the control plane's bootstrap token (its BOOTSTRAP_TOKEN secret on Workers, its ${ENV.bootstrapToken} on Node)`,
      );
    }
    const expiresAt = expiryOf(String(values.expires ?? "365d"));
    // Checked before the claim, which cannot be made twice: its token must have somewhere to go.
    const home = runletHome();
    const file = homePaths(home).localJson;
    if (await exists(file)) {
      throw new CliError(
        `${file} already holds credentials, and is not replaced: set ${ENV.home} to another folder`,
      );
    }

    const what = "making the first user";
    const res = await request(
      `${baseUrl}/v2/init`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${bootstrapToken}`, "content-type": "application/json" },
        body: JSON.stringify({
          name: values.name,
          expiresAt,
          ...(values.project ? { project: values.project } : {}),
          ...(values.plan ? { plan: values.plan } : {}),
        }),
      },
      what,
    );
    const claimed = await readAnswer<Claimed>(res, what, "--control-plane");
    const apiUrl = apiUrlGiven ? String(apiUrlGiven).replace(/\/+$/, "") : claimed.apiUrl;
    const local = { baseUrl, apiUrl, projectId: claimed.project.id, token: claimed.token };
    try {
      await mkdir(home, { recursive: true, mode: 0o700 });
      await writePrivateFile(file, `${JSON.stringify(local, null, 2)}\n`);
    } catch (err) {
      // The claim is made and cannot be made again: this is the one copy of the token.
      console.error(
        `runlet init: could not write ${file} (${(err as Error).message}); the credentials, shown this once:`,
      );
      console.log(JSON.stringify(local));
      return 1;
    }
    const summary = {
      user: claimed.user,
      project: claimed.project,
      expiresAt: claimed.expiresAt,
      baseUrl,
      apiUrl,
      credentials: file,
    };
    if (values.json) console.log(JSON.stringify(summary));
    else {
      // One line, what it did: the user made, and where their credentials are.
      console.log(
        `${claimed.user.name} (${claimed.user.id}) is this Runlet's first user and an operator, owner of project ${claimed.project.name} (${claimed.project.id}); credentials in ${file}, the token expires ${claimed.expiresAt}.`,
      );
    }
    if (!apiUrl) {
      console.error(
        `The control plane did not say where its run API is: set ${ENV.apiUrl}, or add "apiUrl" to ${file}.`,
      );
    } else if (
      !apiUrlGiven &&
      /^https?:\/\/(127\.|localhost|\[::1\])/.test(apiUrl) &&
      !/^http:/.test(baseUrl)
    ) {
      console.error(
        `The control plane says its run API is at ${apiUrl}, on its own machine: set its API_URL (docs/deploy.md), or give --api-url.`,
      );
    }
    console.error(
      `The bootstrap token takes no other user now. Remove it: npx wrangler secret delete BOOTSTRAP_TOKEN --env control-plane (Workers), or unset ${ENV.bootstrapToken} (Node).`,
    );
    return 0;
  },
};
