import { ENV } from "../../common/consts.ts";
import { tokenSubject } from "../../common/jwt.ts";
import { tokenState as stateOf } from "../../common/token-state.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { type CliConfig, callProject, loadConfig, printTable } from "../config.ts";
import { expiryOf } from "../expiry.ts";
import { newToken, revokeToken } from "./user-tokens.ts";

export const USERS_USAGE = `Usage: runlet users list [--json]
       runlet users create --name NAME --expires WHEN [--role member|owner] [--operator] [--json]
       runlet users add <user-id>|me --role member|owner [--json]
       runlet users role <user-id>|me member|owner [--json]
       runlet users remove <user-id>|me [--json]
       runlet users token [<user-id>] --expires WHEN [--json]
       runlet users revoke <user-id> [--json]

The people of this project, and their tokens (docs/deploy.md, "More users and projects").
Every change is audited in the project (users.create, users.add, ...).

  list     each user's id, name, role, whether they are an operator, and when their token
           expires, or 'key retired' once its signing key was retired (a new one: 'runlet users
           token'); never the token — project owners only
  create   a new user, with a token printed once (operators who own the project)
           --name NAME, --expires WHEN (a duration like 90d, an RFC 3339 time, or a date
           2027-01-31 for the end of that day UTC; at most 3650 days ahead),
           --role member (default: may deploy and run) or owner (may also manage tokens,
           secrets, users and read the audit log), --operator (runs this Runlet too: its hosts,
           and its users)
  add      an existing user (from 'runlet users list' of another project) joins this one with
           --role (operators who own the project). 'me': you; an operator may add themselves
           to any project ('runlet projects --all' lists them), audited there as an operator's
  role     makes a member an owner, or an owner a member (owners; an operator, their own role:
           'runlet users role me owner'); never the last owner
  remove   takes a user out of this project (owners); never the last owner. Their token still
           works in their other projects: to shut them out everywhere, 'runlet users revoke'
  token    a new token, printed once, and the old one stops working:
           without <user-id>, your own (before it expires; if it came from local.json, the new
           one is saved there instead of printed); with <user-id>, a member's (operators who own
           the project: the way back for an expired token). --expires WHEN as for create
  revoke   stops a member's token without a new one (operators who own the project), or that
           of a user removed from every project (whose token still makes projects)

A revoked or replaced token is refused at once by the management API and within 10 s by the
run API (which keeps the control plane's answer about a token for 10 s).`;

interface Made {
  id: string;
  name: string;
  role: string;
  operator: boolean;
  expiresAt: string;
  token: string;
}

export interface Member {
  id: string;
  name: string;
  role: string;
  operator: boolean;
  createdAt: string;
  tokenExpiresAt: string | null;
  tokenLastUsedAt: string | null;
  /** Its signing key was retired: the token is refused, though neither revoked nor expired. */
  tokenKeyRetiredAt?: string | null;
}

type Values = Record<string, string | boolean | undefined>;

const ACTIONS = ["list", "create", "add", "role", "remove", "token", "revoke"] as const;

/** What a user's token is now, for the list (common/token-state.ts), with its expiry's date. */
export function tokenState(m: Member, now = Date.now()): string {
  const state = stateOf({ expiresAt: m.tokenExpiresAt, keyRetiredAt: m.tokenKeyRetiredAt }, now);
  const day = m.tokenExpiresAt?.slice(0, 10);
  if (state === "revoked") return "none (revoked)";
  return state === "active" ? `expires ${day}` : state === "expired" ? `expired ${day}` : state;
}

function userId(rest: string[], action: string): string {
  const [id] = rest;
  if (!id)
    throw new CliError(`give the user's id ('runlet users list' shows it)\n\n${USERS_USAGE}`);
  if (action !== "role" && rest.length > 1) {
    throw new CliError(`one user at a time (got ${rest.join(" ")})\n\n${USERS_USAGE}`);
  }
  return id;
}

/** `me`: the user whose token the CLI has (its `sub`). */
function whoIsMe(config: CliConfig): string {
  const me = tokenSubject(config.token);
  if (me?.startsWith("usr_")) return me;
  throw new CliError(
    "'me' is the user whose token the CLI has, and this token is a service account's: give a user's id",
  );
}

function roleOf(text: unknown, where: string): "member" | "owner" {
  if (text === "member" || text === "owner") return text;
  throw new CliError(
    `${where} must be member or owner${text ? ` (got '${text}')` : ""}\n\n${USERS_USAGE}`,
  );
}

async function create(values: Values): Promise<number> {
  if (!values.name) throw new CliError(`--name is required\n\n${USERS_USAGE}`);
  if (!values.expires) throw new CliError(`--expires is required\n\n${USERS_USAGE}`);
  const expiresAt = expiryOf(String(values.expires));
  const config = await loadConfig();
  const made = await callProject<Made>(config, "POST", "/users", "adding the user", {
    name: values.name,
    expiresAt,
    ...(values.role ? { role: values.role } : {}),
    ...(values.operator ? { operator: true } : {}),
  });
  if (values.json) {
    console.log(JSON.stringify(made));
    return 0;
  }
  const operator = made.operator ? ", an operator" : "";
  console.error(
    `Added ${made.name} (${made.id}, ${made.role}${operator}); the token expires ${made.expiresAt}. It is shown only this once:`,
  );
  console.log(made.token);
  console.error(
    `They set ${ENV.baseUrl}=${config.baseUrl} ${ENV.apiUrl}=${config.apiUrl} ${ENV.project}=${config.projectId} and ${ENV.token} to that token.`,
  );
  return 0;
}

async function list(values: Values): Promise<number> {
  const config = await loadConfig();
  const { users } = await callProject<{ users: Member[] }>(
    config,
    "GET",
    "/users",
    "listing users",
  );
  if (values.json) {
    console.log(JSON.stringify({ users }));
    return 0;
  }
  printTable(
    ["ID", "NAME", "ROLE", "OPERATOR", "TOKEN"],
    users.map((u) => [u.id, u.name, u.role, u.operator ? "yes" : "no", tokenState(u)]),
    "No users.",
  );
  return 0;
}

async function member(
  values: Values,
  action: "add" | "role" | "remove",
  rest: string[],
): Promise<number> {
  const given = userId(rest, action);
  const role =
    action === "remove"
      ? undefined
      : action === "add"
        ? roleOf(values.role, "--role")
        : roleOf(rest[1] ?? values.role, "the role");
  const config = await loadConfig();
  const id = given === "me" ? whoIsMe(config) : given;
  const path = `/users/${encodeURIComponent(id)}`;
  if (!role) {
    await callProject(config, "DELETE", path, "removing the user");
    if (values.json) console.log(JSON.stringify({ id, removed: true }));
    else console.log(`Removed ${id} from project ${config.projectId}.`);
    return 0;
  }
  const method = action === "add" ? "PUT" : "PATCH";
  const what = action === "add" ? "adding the user" : "changing the role";
  const done = await callProject<Member>(config, method, path, what, { role });
  if (values.json) console.log(JSON.stringify(done));
  else if (action === "add") console.log(`Added ${done.name} (${done.id}) as ${done.role}.`);
  else console.log(`${done.name} (${done.id}) is now ${done.role}.`);
  return 0;
}

export const users: Command = {
  name: "users",
  summary: "the project's users: list, create, add, role, remove; their tokens: token, revoke",
  usage: USERS_USAGE,
  options: {
    name: { type: "string" },
    expires: { type: "string" },
    role: { type: "string" },
    operator: { type: "boolean" },
  },
  async run({ values, positionals }) {
    const [action, ...rest] = positionals;
    if (!ACTIONS.includes(action as (typeof ACTIONS)[number])) {
      throw new CliError(
        `say ${ACTIONS.slice(0, -1).join(", ")} or ${ACTIONS.at(-1)}${action ? ` (not '${action}')` : ""}\n\n${USERS_USAGE}`,
      );
    }
    const takes = {
      list: {},
      create: { options: ["name", "expires", "role", "operator"] },
      add: { options: ["role"], words: Number.POSITIVE_INFINITY },
      role: { options: ["role"], words: Number.POSITIVE_INFINITY },
      remove: { words: Number.POSITIVE_INFINITY },
      token: { options: ["expires"], words: Number.POSITIVE_INFINITY },
      revoke: { words: Number.POSITIVE_INFINITY },
    }[action as (typeof ACTIONS)[number]];
    // Ids are counted by userId(), which says "one user at a time".
    takesOnly(`users ${action}`, { values, words: rest }, takes, USERS_USAGE);
    switch (action) {
      case "list":
        return list(values);
      case "create":
        return create(values);
      case "add":
      case "role":
      case "remove":
        return member(values, action, rest);
      case "token":
        return newToken(values, rest.length ? userId(rest, "token") : undefined, USERS_USAGE);
      default:
        return revokeToken(values, userId(rest, "revoke"));
    }
  },
};
