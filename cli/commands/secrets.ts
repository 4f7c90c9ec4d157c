import {
  HOSTS_OWN,
  hostsOwnRefusal,
  SECRET_NAME,
  SECRET_NAME_RULE,
} from "../../common/secret-name.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { callProject, loadConfig, printTable } from "../config.ts";
import { confirmOrStop, YES_OPTION } from "../confirm.ts";
import { withCheck } from "../cut-off.ts";
import { readSecret } from "../stdin.ts";

/** The control plane's 404 for a secret of no such name (control-plane/routes/secrets.ts). */
const notFound = (name: string) => `secret '${name}' not found`;
const NAMES_ARE = "(runlet secrets list shows the names)";

/**
 * A 404 for a secret of no such name says where the names are, as `secrets delete` at a terminal
 * does: `secrets get NOPE` said only "secret 'NOPE' not found".
 */
function whereNamesAre(err: unknown, name: string): unknown {
  if (!(err instanceof CliError) || err.answer?.status !== 404) return err;
  if (!err.said?.startsWith(notFound(name))) return err;
  return new CliError(`${err.message} ${NAMES_ARE}`, err.answer, `${err.said} ${NAMES_ARE}`);
}

const USAGE = `Usage: runlet secrets set <NAME> [VALUE | -] [--json]
       runlet secrets get <NAME> [--json]
       runlet secrets delete <NAME> [--yes] [--json]
       runlet secrets list [--json]

Project secrets, encrypted at rest (project owners only; every read and write is audited).

  set   stores VALUE under NAME. Leave VALUE out (or give -) to read it from standard input,
        which keeps it out of your shell history:  printf %s "$DB_URL" | npx runlet secrets set DB_URL
        (typed at a terminal, it is not shown; Ctrl-D ends it)
        The apps' running replicas that read another value are replaced, no redeploy needed:
        calls made once this command returns get the new value; calls running then finish
        with the value before
  get   prints the value alone, for  $(npx runlet secrets get DB_URL);  --json prints {name, value}
  delete  removes it; running replicas are replaced likewise: new calls do not have it. On a
          terminal it asks first (default No): --yes (-y) answers yes. A script (stdin or
          stdout not a terminal) is not asked
  list  the names, when each was last written and by whom; never a value (not audited);
        --json prints {secrets: [{name, createdAt, updatedAt, updatedBy, updatedByName}]}

NAME: letters, digits and underscores, not starting with a digit.`;

/**
 * What happens to the replicas running now: a replica's environment is set as it starts, so the
 * runtime hosts replace them (docs/api.md, "Secrets"). Before, an app called at once read the
 * old value, or none, and nothing said why.
 */
const runningNote = (now: string, stale: string, which = "") =>
  `The project's apps' running replicas${which} are being replaced: calls made from now on ${now} (no redeploy needed; a runtime host that could not be told at once hears it within 2 s). Calls running now finish with ${stale}.`;

/** The value piped in: one trailing newline is the terminal's, not the value's. */
async function readValue(): Promise<string> {
  return (await readSecret("the value")).replace(/\r?\n$/, "");
}

/**
 * Refuses a name the control plane would, before a value is read or a question asked: `set
 * X=1` (as other tools take it), or `set PATH`, read the value from standard input, on a
 * terminal waiting for it to be typed, and only then was refused; in a script `set X=1` said no
 * value had come.
 */
function checkName(action: string | undefined, name: string): void {
  // One stored before names of the host's were refused can still be read and deleted.
  if (action === "set" && HOSTS_OWN.includes(name)) throw new CliError(hostsOwnRefusal(name));
  if (SECRET_NAME.test(name)) return;
  const eq = name.indexOf("=");
  const before = name.slice(0, eq);
  // The value is not repeated: it may be the secret itself.
  if (action === "set" && eq > 0 && SECRET_NAME.test(before))
    throw new CliError(
      `"${before}=…" is not a secret's name: give the name and the value apart, runlet secrets set ${before} VALUE (or leave VALUE out to read it from standard input); nothing was stored`,
    );
  throw new CliError(`"${name}" is not a secret's name: it ${SECRET_NAME_RULE}`);
}

interface SecretInfo {
  name: string;
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
  updatedByName: string;
}

async function list(json: boolean): Promise<number> {
  const config = await loadConfig();
  const answer = await callProject<{ secrets: SecretInfo[] }>(
    config,
    "GET",
    "/secrets",
    "listing secrets",
  );
  if (json) console.log(JSON.stringify(answer));
  else
    printTable(
      ["NAME", "UPDATED", "BY"],
      answer.secrets.map((s) => [s.name, s.updatedAt, `${s.updatedByName} (${s.updatedBy})`]),
      "No secrets.",
    );
  return 0;
}

export const secrets: Command = {
  name: "secrets",
  summary: "set, get, delete and list project secrets",
  usage: USAGE,
  options: { ...YES_OPTION },
  async run({ values, positionals }) {
    const [action, name, given] = positionals;
    if (action === "list" && !name) {
      takesOnly("secrets list", { values, words: [] }, {}, USAGE);
      return list(values.json === true);
    }
    if (!["set", "get", "delete"].includes(action ?? "") || !name) {
      throw new CliError(`say set, get or delete and the secret's name, or list\n\n${USAGE}`);
    }
    // `secrets get A B` read A alone; `secrets set A x y` stored x.
    const words = action === "set" ? 2 : 1;
    const options = action === "delete" ? ["yes"] : [];
    takesOnly(
      `secrets ${action}`,
      { values, words: positionals.slice(1) },
      { words, options },
      USAGE,
    );
    checkName(action, name);
    const config = await loadConfig();
    const path = `/secrets/${encodeURIComponent(name)}`;
    if (action === "set") {
      const piped = given === undefined || given === "-";
      const value = piped ? await readValue() : given;
      // Nothing came (an empty file, a variable that was not set): no value was meant to be "".
      if (piped && value === "")
        throw new CliError(`no value on standard input for ${name}: nothing was stored`);
      await callProject(config, "PUT", path, `setting ${name}`, { value }).catch((err: unknown) => {
        throw withCheck(err, "sending it again does no harm: it stores the same value");
      });
      if (values.json) console.log(JSON.stringify({ name, stored: true }));
      else console.log(`Stored ${name}.`);
      if (!values.json)
        console.error(
          // A value set again unchanged replaces none (docs/api.md, "Secrets").
          runningNote(
            `get ${name} as it is now`,
            "the value before (or none)",
            " that read another value",
          ),
        );
      return 0;
    }
    if (action === "delete") {
      await confirmOrStop(
        async () => {
          // Said before the question: a name mistyped was asked of, and 404 only after a yes.
          const answer = await callProject<{ secrets: SecretInfo[] }>(
            config,
            "GET",
            "/secrets",
            "listing secrets",
          );
          if (!answer.secrets.some((s) => s.name === name))
            throw new CliError(`${notFound(name)} ${NAMES_ARE}`);
          return `Delete secret ${name}? Its value is gone for good; replicas started from now on do not have it.`;
        },
        `Kept ${name}: nothing was deleted`,
        values.yes,
      );
      await callProject(config, "DELETE", path, `deleting ${name}`).catch((err: unknown) => {
        throw whereNamesAre(err, name);
      });
      if (values.json) console.log(JSON.stringify({ name, deleted: true }));
      else console.log(`Deleted ${name}.`);
      if (!values.json) console.error(runningNote(`do not have ${name}`, "it still set"));
      return 0;
    }
    const secret = await callProject<{ name: string; value: string }>(
      config,
      "GET",
      path,
      `reading ${name}`,
    ).catch((err: unknown) => {
      throw whereNamesAre(err, name);
    });
    console.log(values.json ? JSON.stringify(secret) : secret.value);
    return 0;
  },
};
