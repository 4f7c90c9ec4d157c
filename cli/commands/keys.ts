import { tokenKid } from "../../common/jwt.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { callApi, loadConfig, printTable } from "../config.ts";
import { confirmOrStop, YES_OPTION } from "../confirm.ts";

const USAGE = `Usage: runlet keys [list] [--json]
       runlet keys rotate [--json]
       runlet keys retire <kid> [--force] [--yes] [--json]

The keys every token is signed with (operators only; the local owner is one). See
docs/deploy.md, "Rotating the platform's secrets".

  list     the signing key, and the keys signed with before it: "previous" ones still verify
           their tokens (they are in the JWKS), "retired" ones no longer do
  rotate   a new key signs every token from now on. The key before it stays in the JWKS, so
           the tokens it signed — users', service accounts', dashboard sessions — keep working
           on the management API and the run API until you retire it
  retire   takes a previous key out of the JWKS: the tokens it signed are refused (401 "token
           was signed by key <kid>, which was retired …"), by the run API within 10 s. Give
           their holders new tokens first (runlet users token, runlet tokens create). Refused
           when the token you call with was signed with it, unless --force. For good: on a
           terminal it asks first (default No): --yes (-y) answers yes. A script (stdin or
           stdout not a terminal) is not asked

The local owner's token (local.json) is renewed by the control plane at each change. On
Workers the keys are secrets (SIGNING_KEY, PREVIOUS_SIGNING_KEYS): see docs/deploy.md.`;

interface Key {
  kid: string;
  state: "signing" | "previous" | "retired";
  replacedAt: string | null;
  retiredAt: string | null;
}

function table(keys: Key[]): void {
  printTable(
    ["KID", "STATE", "REPLACED", "RETIRED"],
    keys.map((k) => [k.kid, k.state, k.replacedAt ?? "—", k.retiredAt ?? "—"]),
    "No signing keys.",
  );
}

export const keys: Command = {
  name: "keys",
  summary: "list, rotate and retire the keys tokens are signed with",
  usage: USAGE,
  options: { force: { type: "boolean" }, ...YES_OPTION },
  async run({ values, positionals }) {
    const [action = "list", ...rest] = positionals;
    if (action !== "list" && action !== "rotate" && action !== "retire")
      throw new CliError(`say list, rotate or retire\n\n${USAGE}`);
    // `keys retire k1 k2` retired k1 alone, and `keys rotate --force` rotated: refused instead.
    const takes = { list: {}, rotate: {}, retire: { options: ["force", "yes"], words: 1 } }[action];
    takesOnly(`keys ${action}`, { values, words: rest }, takes, USAGE);
    const kid = rest[0] ?? "";
    if (action === "retire" && !kid)
      throw new CliError(`give the kid of the key to retire (runlet keys)\n\n${USAGE}`);
    const config = await loadConfig(process.env, { anyProject: true });
    const print = (answer: { keys: Key[] }) => {
      if (values.json) console.log(JSON.stringify(answer));
      else table(answer.keys);
    };
    if (action === "list") {
      print(await callApi<{ keys: Key[] }>(config, "GET", "/v2/keys", "listing signing keys"));
      return 0;
    }
    if (action === "rotate") {
      if (!values.json) console.error(`Rotating the signing key of ${config.baseUrl}…`);
      const answer = await callApi<{ keys: Key[] }>(
        config,
        "POST",
        "/v2/keys/rotate",
        "rotating the signing key",
      );
      const [now, before] = answer.keys;
      if (values.json) {
        print(answer);
        return 0;
      }
      console.log(`Tokens are signed with ${now?.kid} from now on.`);
      // What to do next is a note: stdout holds the outcome alone.
      if (before)
        console.error(
          `${before.kid} still verifies the tokens it signed. Once their holders have new ones (runlet users token, runlet tokens create), retire it: runlet keys retire ${before.kid}`,
        );
      // Read again: the control plane renews local.json's token as it changes its keys.
      if (
        before &&
        tokenKid((await loadConfig(process.env, { anyProject: true })).token) === before.kid
      )
        console.error(
          `Your own token (RUNLET_TOKEN, or local.json) was signed with ${before.kid}: get a new one before retiring it.`,
        );
      return 0;
    }
    // The action left: retire.
    await confirmOrStop(
      async () => {
        // Said before the question: a kid mistyped was asked of, and 404 only after a yes.
        const { keys } = await callApi<{ keys: Key[] }>(
          config,
          "GET",
          "/v2/keys",
          "listing signing keys",
        );
        const key = keys.find((k) => k.kid === kid);
        if (!key) throw new CliError(`no signing key '${kid}' (runlet keys lists them)`);
        // Refusals the control plane would give after a yes, said before the question instead.
        if (key.state === "signing")
          throw new CliError(
            `${kid} is the key tokens are signed with now: rotate first (runlet keys rotate), then retire it`,
          );
        if (key.state === "retired")
          throw new CliError(`${kid} was already retired at ${key.retiredAt}`);
        if (tokenKid(config.token) === kid && !values.force)
          throw new CliError(
            `the token you are calling with was signed with ${kid}: once it is retired, that token is refused too. Get a new one first (runlet users token), or retire it all the same (--force)`,
          );
        return `Retire signing key ${kid}? Every token it signed (users', service accounts', dashboard sessions) is refused from now on, for good.`;
      },
      `Kept ${kid}: nothing was retired`,
      values.yes,
    );
    // No "Retiring…" first: the answer comes at once, and a 404 came after that line, which
    // read as if something had started.
    const answer = await callApi<{ keys: Key[] }>(
      config,
      "POST",
      `/v2/keys/${encodeURIComponent(kid)}/retire${values.force ? "?force=true" : ""}`,
      "retiring the key",
    );
    if (values.json) print(answer);
    else
      console.log(
        `Retired ${kid}: tokens signed with it are refused (the run API within 10 s). It is no longer in the JWKS.`,
      );
    return 0;
  },
};
